# The exception tag thrown by __wasm_longjmp and caught by code lowered with
# -mllvm -wasm-enable-sjlj. Hidden: defined and used inside one .so only.
	.hidden __c_longjmp
	.globl __c_longjmp
	.tagtype __c_longjmp i32
__c_longjmp:
