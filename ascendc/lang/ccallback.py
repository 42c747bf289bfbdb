"""C callbacks into Python that a runtime stop cannot break: `guarded_callback(fn, restype,
argtypes, on_stop)` is the address of a small native function (built with llvmlite) that takes
the GIL, calls `fn(*args)` and returns its result.

Why not a ctypes thunk: rt stops a cancelled kernel's threads with an asynchronous exception
(`rt.errors.KernelStop`, `PyThreadState_SetAsyncExc`). Sent while the thread runs compiled
(nogil) code, it stays pending and fires at the next Python bytecode, which can be the first one
of a callback that compiled code calls (the barrier wait of `sync_all`, a fault record): before
any `try` of the callback. A ctypes thunk then prints "Exception ignored on calling ctypes
callback function" and returns an undefined value to the kernel. Here a KernelStop raised by
the call is cleared and `on_stop` returned (rt sends the stop again while the range still runs);
any other exception is reported as unraisable, as ctypes would.
"""
from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm

from rt.errors import KernelStop

# argument kinds: (LLVM type, the C API function that boxes it)
_BOX = {"i64": ("i64", "PyLong_FromLongLong"), "u64": ("i64", "PyLong_FromUnsignedLongLong"),
        "f64": ("double", "PyFloat_FromDouble"), "ptr": ("i8*", "PyLong_FromVoidPtr")}
_DECLS = """
declare i32 @PyGILState_Ensure()
declare void @PyGILState_Release(i32)
declare i8* @PyTuple_New(i64)
declare i32 @PyTuple_SetItem(i8*, i64, i8*)
declare i8* @PyLong_FromLongLong(i64)
declare i8* @PyLong_FromUnsignedLongLong(i64)
declare i8* @PyFloat_FromDouble(double)
declare i8* @PyLong_FromVoidPtr(i8*)
declare i8* @PyObject_Call(i8*, i8*, i8*)
declare i64 @PyLong_AsLongLong(i8*)
declare void @Py_DecRef(i8*)
declare i32 @PyErr_ExceptionMatches(i8*)
declare void @PyErr_Clear()
declare void @PyErr_WriteUnraisable(i8*)
"""
_C_API = [line.split("@")[1].split("(")[0] for line in _DECLS.split("\n") if "@" in line]
_LOCK = threading.Lock()
_KEEP: list = []        # the callables: alive for the process, like the engine
_ENGINE: list = []      # one MCJIT engine (it owns its target machine) holding every trampoline


def _target_machine():
    """The target machine of the one engine (called once: the engine takes it over)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for name in _C_API:                         # the C API functions of this process
        llvm.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name),
                                          ctypes.c_void_p).value)
    return llvm.Target.from_default_triple().create_target_machine(opt=0)   # a few calls


def _ir(name: str, fn_addr: int, stop_addr: int, restype: str, argtypes: tuple,
        on_stop: int) -> str:
    params = ", ".join(f"{_BOX[k][0]} %a{i}" for i, k in enumerate(argtypes))
    ret = "i64" if restype == "i64" else "void"
    body = ["  %g = call i32 @PyGILState_Ensure()",
            f"  %t = call i8* @PyTuple_New(i64 {len(argtypes)})"]
    for i, k in enumerate(argtypes):
        ty, box = _BOX[k]
        body += [f"  %o{i} = call i8* @{box}({ty} %a{i})",
                 f"  %s{i} = call i32 @PyTuple_SetItem(i8* %t, i64 {i}, i8* %o{i})"]
    fn = f"i8* inttoptr (i64 {fn_addr} to i8*)"
    body += [f"  %r = call i8* @PyObject_Call({fn}, i8* %t, i8* null)",
             "  call void @Py_DecRef(i8* %t)",
             "  %failed = icmp eq i8* %r, null",
             "  br i1 %failed, label %fail, label %ok",
             "ok:"]
    if ret == "i64":
        body += ["  %v = call i64 @PyLong_AsLongLong(i8* %r)"]
    body += ["  call void @Py_DecRef(i8* %r)",
             "  call void @PyErr_Clear()",       # a result that is not an int: nothing to keep
             "  call void @PyGILState_Release(i32 %g)",
             "  ret i64 %v" if ret == "i64" else "  ret void",
             "fail:",
             f"  %m = call i32 @PyErr_ExceptionMatches(i8* inttoptr (i64 {stop_addr} to i8*))",
             "  %stopped = icmp ne i32 %m, 0",
             "  br i1 %stopped, label %clear, label %report",
             "clear:",
             "  call void @PyErr_Clear()",
             "  br label %out",
             "report:",
             f"  call void @PyErr_WriteUnraisable({fn})",
             "  br label %out",
             "out:",
             "  call void @PyGILState_Release(i32 %g)",
             f"  ret i64 {on_stop}" if ret == "i64" else "  ret void"]
    return (_DECLS + f"define {ret} @{name}({params}) {{\nentry:\n" + "\n".join(body) +
            "\n}\n")


def guarded_callback(fn, restype: str, argtypes: tuple = (), on_stop: int = 0) -> int:
    """The address of a native `restype guarded(argtypes...)` calling `fn`: restype "i64" or
    "void"; argtypes of "i64", "u64", "f64", "ptr"; `on_stop` is returned (i64) when the call
    ended in a KernelStop."""
    with _LOCK:
        name = f"ascend_emu_guarded_{len(_KEEP)}"
        mod = llvm.parse_assembly(_ir(name, id(fn), id(KernelStop), restype, tuple(argtypes),
                                      int(on_stop)))
        mod.verify()
        if not _ENGINE:
            _ENGINE.append(llvm.create_mcjit_compiler(mod, _target_machine()))
        else:
            _ENGINE[0].add_module(mod)
        _ENGINE[0].finalize_object()
        _KEEP.append(fn)
        return _ENGINE[0].get_function_address(name)


def call_address(addr: int, restype, *argtypes):
    """A ctypes function of the native function at `addr` (for tests and interpret paths)."""
    return ctypes.CFUNCTYPE(restype, *argtypes)(addr)
