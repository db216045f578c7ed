"""Fixtures of the corpus tests: one local Ray per pytest-xdist worker for every Ray-engine test.

Starting Ray takes seconds (its processes, then the actors' imports), so the tests that run the Ray engine share
one local Ray (two CPUs, no dashboard) for the session of their worker instead of starting one each.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray, started here (the engine leaves a Ray it did not start running) and shut down at the end."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
