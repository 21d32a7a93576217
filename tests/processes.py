"""Child processes of the tests that die with the test run.

A ``groupcoord serve`` (or any python child) that a test started and that outlived pytest (killed
by ``timeout`` in CI, say) spun on against its dead broker, holding ports and a core. Each child
started here asks the kernel (``PR_SET_PDEATHSIG``, the local broker's own ``die_with_parent``)
for SIGKILL when its parent goes: nothing a test's child holds is worth a graceful stop once the
test is gone, and a paused (SIGSTOP) child would sit on a SIGTERM.

The kernel sends that signal when the *thread* that forked the child ends, not the process: a
child forked from a short-lived thread would be killed with that thread. Children are therefore
forked from the main thread, or from one spawner thread that lives as long as the process.
"""

from __future__ import annotations

import functools
import signal
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from groupcoord.local_broker import die_with_parent

DIE_WITH_PARENT = functools.partial(die_with_parent, signal.SIGKILL)

# One thread, never shut down before the interpreter's exit: forks from it outlive the tests' own
# short-lived threads.
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-spawner")


def popen(args: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen`` of a child the kernel kills when this process dies."""
    kwargs.setdefault("preexec_fn", DIE_WITH_PARENT)
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(args, **kwargs)
    return _spawner.submit(lambda: subprocess.Popen(args, **kwargs)).result()


def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` of such a child (the calling thread waits for it, so it outlives the child)."""
    kwargs.setdefault("preexec_fn", DIE_WITH_PARENT)
    return subprocess.run(args, **kwargs)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead and not reaped yet, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
