"""Fixtures of the corpus tests: one local Ray per test module (and pytest-xdist worker) for its Ray-engine tests.

Starting Ray takes seconds (its processes, then the actors' imports), so the tests that run the Ray engine share
one local Ray (no dashboard) in their worker instead of starting one each. It has the worker's share of the cores
(one each for two workers on two cores, as tests/conftest.py gives torch): the engine gives each actor
``CPUs // workers`` torch threads, and two threads in a lone actor would spin against the other worker's tests.
A test elsewhere may shut it down (``tests/attacks/test_ray_address.py`` needs a process without Ray: a running Ray
is reused, never looked up), so each use starts it again when it is not running. Each module that used it shuts it
down at its end: Ray's daemons and idle workers use about 0.04 of a core while they wait (measured), which over the
rest of a 10-minute suite costs more than starting Ray again (about 4 CPU-seconds) in the next module that needs it.
"""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="module")
def _ray_module():
    yield
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


@pytest.fixture
def ray_local(_ray_module):
    """A local Ray, started here if none runs in this process (the engine leaves a Ray it did not start running)."""
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        share = (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        ray.init(num_cpus=max(1, share), include_dashboard=False, log_to_driver=False)
    return ray
