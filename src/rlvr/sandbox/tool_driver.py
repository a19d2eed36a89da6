"""Runs INSIDE the sandbox (standard library only): one tool call of a policy's rollout.

The host writes the call's code to ``call.py`` in the working directory (``pool_worker.py`` runs
this file in a forked child there). This script reads and deletes it and runs it as ``__main__``
in fresh globals, with ``sys.stdout`` writing straight to the result channel
(``$RLVR_CHANNEL_FD``): what the code prints is the observation the policy reads next, and the
pool kills a call whose output passes the channel's cap. If the code raises, the exception's line
(``NameError: name 'x' is not defined``) follows its output there and the exit status is 1.
Nothing of a verifier's (tests, expected values) is ever here.
"""

import io
import os
import sys


def main():
    with open("call.py", encoding="utf-8", errors="replace") as handle:
        source = handle.read()
    os.unlink("call.py")
    channel = io.TextIOWrapper(
        os.fdopen(int(os.environ["RLVR_CHANNEL_FD"]), "wb", buffering=0), encoding="utf-8", errors="replace"
    )
    channel.reconfigure(write_through=True)
    sys.stdout = channel
    try:
        code = compile(source, "<tool>", "exec")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    except BaseException as error:  # SystemExit too: the observation says how the call ended
        try:
            channel.write("%s: %s\n" % (type(error).__name__, error))
        finally:
            os._exit(1)


main()
