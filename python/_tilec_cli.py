"""The tilec command of the wheel (pyproject.toml's project.scripts; docs/python.md,
"Install"): pip makes a `tilec` script that calls main(), which runs the CLI the wheel put in
the package, tilec/tilec (its RUNPATH finds the package's libtilec beside it), with the same
arguments, so it is the tilec of meson install: its output, its exit status. A module of its
own beside the package, not in it, so that the command does not import the package (which
loads libtilec through TILEC_LIB and the compiled core): it starts as fast as Python does,
whatever the package's environment says. Installed in the wheel only; meson install puts
the CLI itself in bin/."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tilec", "tilec")
    try:
        os.execv(exe, ["tilec"] + sys.argv[1:])
    except OSError as e:
        sys.exit("tilec: cannot run %s (%s): the package's CLI is missing or not executable; "
                 "reinstall the wheel (pip install --force-reinstall tilec)" % (exe, e.strerror))
