"""conftest.py — the oracle's settings: which tilec it drives, the seed and the count.

TILEC_BIN           the tilec binary (default: build/tilec of this source tree)
TILEC_ORACLE_SEED   the seed of every random case (default below); each test derives its
                    own generator from it and the test's name, so `-k NAME` reproduces one
TILEC_ORACLE_CASES  how many rounds of random cases each randomised test runs (default 1)
"""
import os
import sys
import zlib

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402  (a missing numpy is an error, never a skip)

DEFAULT_SEED = 20261211
SEED = int(os.environ.get("TILEC_ORACLE_SEED", DEFAULT_SEED))
ROUNDS = int(os.environ.get("TILEC_ORACLE_CASES", "1"))
ROOT = os.path.dirname(os.path.dirname(HERE))


def tilec_path():
    return os.environ.get("TILEC_BIN") or os.path.join(ROOT, "build", "tilec")


def pytest_report_header(config):
    return ["tilec oracle: TILEC_BIN=%s TILEC_ORACLE_SEED=%d TILEC_ORACLE_CASES=%d" % (tilec_path(), SEED, ROUNDS)]


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line("tilec oracle: seed %d (TILEC_ORACLE_SEED), %d round(s) of random cases "
                                "(TILEC_ORACLE_CASES), tilec %s" % (SEED, ROUNDS, tilec_path()))


@pytest.fixture(scope="session")
def tilec():
    p = tilec_path()
    if not (os.path.isfile(p) and os.access(p, os.X_OK)):
        pytest.fail("no tilec binary at %s: build it (scripts/build.sh build) or set TILEC_BIN" % p)
    return p


@pytest.fixture
def rng(request):
    """A generator of its own for each test, from the seed and the test's name."""
    name = request.node.module.__name__ + "::" + request.node.name
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


@pytest.fixture
def repro(request):
    """How to run this test again with the same data (for failure messages)."""
    node = os.path.join(os.path.relpath(HERE, os.getcwd()), request.node.nodeid.split("/")[-1])
    return "reproduce: TILEC_ORACLE_SEED=%d TILEC_ORACLE_CASES=%d /usr/bin/python3 -m pytest '%s'" % (SEED, ROUNDS, node)


def report(problems, repro, limit=40):
    """The assertion text for a list of problems."""
    head = "%d problem(s); %s\n" % (len(problems), repro)
    body = "\n".join(problems[:limit])
    if len(problems) > limit:
        body += "\n... and %d more" % (len(problems) - limit)
    return head + body


def fail_on(problems, repro):
    """Fails the test with the problems' text alone (no traceback: the text says it all)."""
    if problems:
        pytest.fail(report(problems, repro), pytrace=False)
