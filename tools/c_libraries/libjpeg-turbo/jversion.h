/* The version strings libjpeg-turbo 2.1.5 reports (JPEG_LIB_VERSION 62). */
#define JVERSION "6b  27-Mar-1998"
#define JCOPYRIGHT "Copyright (C) 1991-2023 The libjpeg-turbo Project, the Independent JPEG Group and others"
#define JCOPYRIGHT_SHORT "Copyright (C) 1991-2023 The libjpeg-turbo Project and many others"
