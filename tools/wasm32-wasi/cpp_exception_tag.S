# The tag that C++ throw/catch use under -fwasm-exceptions (libunwind's
# _Unwind_RaiseException throws it; compiled code catches it). Hidden: each
# extension module has its own runtime (README.md). A .S file because clang 19
# refuses a weak undefined tag from C ("undefined tag symbol cannot be weak").
	.hidden __cpp_exception
	.globl __cpp_exception
	.tagtype __cpp_exception i32
__cpp_exception:
