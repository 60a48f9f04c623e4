"""Shared test helpers: Mesa availability (skip, or fail when CI sets TILESIM_REQUIRE_MESA=1)."""

from __future__ import annotations

import functools
import os
import shutil

import pytest
from hypothesis import settings

# Hypothesis profiles: "dev" (the default) draws new examples every run, to find what no one
# wrote down; "ci" (.ci/run sets HYPOTHESIS_PROFILE=ci) draws the same examples every run, so
# that a landing is judged on the code, not on the draw. A counterexample a dev run finds
# becomes a test of its own.
settings.register_profile("dev")
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@functools.cache
def _mesa_status() -> tuple[bool, str]:
    from tilesim.shaders.glsl_compile import mesa_available

    return mesa_available()


def _unavailable(reason: str) -> None:
    """Skip, or fail where CI demands the Mesa toolchain (TILESIM_REQUIRE_MESA=1)."""
    if os.environ.get("TILESIM_REQUIRE_MESA") == "1":
        pytest.fail(f"required here (TILESIM_REQUIRE_MESA=1): {reason}")
    pytest.skip(reason)


def require_tools(*names: str) -> None:
    """Skip (or fail in CI) when a program such as apitrace or xvfb-run is not installed."""
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        _unavailable(f"not installed: {', '.join(missing)}")


def require_mesa() -> None:
    """Skip the calling test when Mesa softpipe (EGL surfaceless) is unusable here.

    With TILESIM_REQUIRE_MESA=1 (CI) a missing Mesa fails the test instead of skipping it.
    """
    ok, why = _mesa_status()
    if not ok:
        _unavailable(f"Mesa softpipe unavailable: {why}")


@pytest.fixture
def mesa() -> None:
    """Fixture form of :func:`require_mesa`."""
    require_mesa()
