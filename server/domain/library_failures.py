"""Whether a parser library failed on its input, or our own code failed.

pypdf and python-docx, fed crafted files, fail with whatever their code trips on (AssertionError, NotImplementedError
for a filter they lack, RecursionError in recursive descent, AttributeError deep in a tree walk), not with errors of
their own. Each is the file's fault when it was raised in the library's code; listing the types one by one missed
the next one found (each was a 500). A failure with no frame of the library on its stack is ours, and surfaces as
one.
"""

from __future__ import annotations

__all__ = ["raised_in"]


def raised_in(exc: BaseException, package: str) -> bool:
    """Whether `package`'s code is on the failure's stack (the call into it, or a function it called, failed).
    MemoryError never is: running out of memory is not the input being corrupt, and has its own answer."""
    if isinstance(exc, MemoryError):
        return False
    prefix = f"{package}."
    tb = exc.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if module == package or module.startswith(prefix):
            return True
        tb = tb.tb_next
    return False
