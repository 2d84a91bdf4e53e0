"""`launch view RUN_DIR` (launch/view.py) in a real headless browser: Debian's Chromium driven by
playwright. The page loads and connects, the scene holds the robot, moving the time scrubber
moves it. Screenshots are kept as artifacts in runs/test-artifacts/ (view-start.png,
view-end.png). Needs /usr/bin/chromium (.ci/run installs Debian's chromium package)."""
from __future__ import annotations

import queue
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "runs" / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
# what the machine's closed network needs (docs/INSTALL.md): no background connections, no GPU
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--use-gl=swiftshader", "--enable-unsafe-swiftshader"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _robot_pixels(png: bytes) -> np.ndarray:
    """(row, column) of the pixels in the robot's link colour (launch/view.py ROBOT_RGB, 40 110 200)."""
    import io

    import matplotlib.image as mpimg

    img = (mpimg.imread(io.BytesIO(png), format="png")[..., :3] * 255).astype(int)
    return np.argwhere((np.abs(img - [40, 110, 200]) < 40).all(axis=-1))


def test_view_serves_the_run_and_the_scrubber_moves_the_robot(synthetic_run):
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: apt-get install chromium (.ci/run does)"
    from playwright.sync_api import sync_playwright

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "launch", "view", str(synthetic_run), "--port", str(port),
                               "--trace-frames"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in server.stdout], daemon=True).start()

    def wait_for(pattern: str, timeout: float = 60.0) -> re.Match:
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                assert server.poll() is None, f"launch view exited: {''.join(seen)}"
                continue
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match
        raise AssertionError(f"no line matching {pattern!r} in {timeout} s; output: {''.join(seen)[-2000:]}")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        wait_for(r"view: http://127\.0\.0\.1:\d+")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(f"http://127.0.0.1:{port}")
            page.get_by_text("Connected").wait_for(timeout=30_000)
            page.locator("canvas").first.wait_for(timeout=30_000)
            slider = page.get_by_role("slider").first
            slider.wait_for(timeout=30_000)
            page.wait_for_timeout(2000)  # the first frame rendered (software WebGL)
            start = _robot_pixels(page.screenshot(path=str(ARTIFACTS / "view-start.png")))
            assert len(start) > 200, "no robot in the scene"
            slider.focus()
            page.keyboard.press("End")
            moved = wait_for(r"frame t=1\.0000 base=([-\d.]+),([-\d.]+),([-\d.]+)")
            page.wait_for_timeout(1500)
            end = _robot_pixels(page.screenshot(path=str(ARTIFACTS / "view-end.png")))
            browser.close()
        assert float(moved.group(1)) == pytest.approx(0.5, abs=1e-3)  # the synthetic run's base at t = 1 s
        assert len(end) > 200
        shift = np.abs(end.mean(axis=0) - start.mean(axis=0)).max()
        assert shift > 20, f"the robot moved {shift:.1f} px on screen"  # it walked 0.5 m
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_view_refuses_a_folder_that_is_not_a_run(tmp_path):
    out = subprocess.run([sys.executable, "-m", "launch", "view", str(tmp_path), "--port", str(_free_port())],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "not a run folder" in out.stderr and "Traceback" not in out.stderr
