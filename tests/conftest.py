"""Shared test helpers: Mesa availability (skip, or fail when CI sets TILESIM_REQUIRE_MESA=1)."""

from __future__ import annotations

import functools
import os

import pytest


@functools.cache
def _mesa_status() -> tuple[bool, str]:
    from shaders.glsl_compile import mesa_available

    return mesa_available()


def require_mesa() -> None:
    """Skip the calling test when Mesa softpipe (EGL surfaceless) is unusable here.

    With TILESIM_REQUIRE_MESA=1 (CI) a missing Mesa fails the test instead of skipping it.
    """
    ok, why = _mesa_status()
    if ok:
        return
    if os.environ.get("TILESIM_REQUIRE_MESA") == "1":
        pytest.fail(f"Mesa is required here (TILESIM_REQUIRE_MESA=1): {why}")
    pytest.skip(f"Mesa softpipe unavailable: {why}")


@pytest.fixture
def mesa() -> None:
    """Fixture form of :func:`require_mesa`."""
    require_mesa()
