"""Pass a numba function to another as a compile-time constant that compiled code can cache.

Numba lowers a dispatcher passed as an argument (`kernel(robot_f, ...)`) to the address of the
Python object, which marks the caller "uses dynamic globals" and keeps it out of numba's disk
cache: every process then recompiles the whole integrator. `static(fn)` wraps the dispatcher in
a type whose value is empty: calls through it are resolved at compile time exactly as before,
and nothing process-specific ends up in the machine code.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from numba import types
from numba.core.imputils import lower_constant
from numba.extending import models, register_model, typeof_impl


class StaticDispatcherType(types.Dispatcher):
    """A Dispatcher type that carries no run-time value."""

    def __init__(self, dispatcher):
        super().__init__(dispatcher)
        self.name = f"static({dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__})"


register_model(StaticDispatcherType)(models.OpaqueModel)


class static:  # noqa: N801 - used like a decorator-style wrapper
    """`static(dispatcher)`: the dispatcher as a cacheable compile-time constant."""

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher


@typeof_impl.register(static)
def _typeof_static(value, context):
    return StaticDispatcherType(value.dispatcher)


@lower_constant(StaticDispatcherType)
def _lower_static(context, builder, typ, value):
    return context.get_constant_null(typ)


def drop_stale_cache(dispatcher, prefix: str, dependencies: list[str]) -> None:
    """Delete numba's cached machine code of the module `dispatcher` lives in (files named
    `prefix*` in its cache folder) when any file of `dependencies` changed since it was cached.

    Numba checks only the source file of a cached function, not the modules whose functions it
    inlines: an edit of the integrator kernel would otherwise leave stale plants in the cache.
    A stamp file beside the cache holds the SHA-256 of the dependencies' sources."""
    cache = getattr(dispatcher, "_cache", None)
    folder = getattr(cache, "_cache_path", None)
    if folder is None:
        return
    digest = hashlib.sha256(b"".join(Path(f).read_bytes() for f in dependencies)).hexdigest()
    stamp = Path(folder) / f"{prefix}deps-sha256"
    try:
        if stamp.exists() and stamp.read_text() == digest:
            return
        for old in Path(folder).glob(f"{prefix}*.nb[ic]"):
            old.unlink(missing_ok=True)
        Path(folder).mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # a read-only cache folder: numba then compiles in memory anyway
        pass
