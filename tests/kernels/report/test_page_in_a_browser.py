"""The report page in a real headless browser (Debian's `chromium`, driven over the DevTools
protocol): loaded from disk, no console error, every tensor has its section and plot (inline
SVG with its texts), shown at the size it was drawn (so its text has the pixel sizes it was drawn with), and a screenshot
saved under the test's temporary folder."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from beam_tensorize.kernels.report.render import PLOT_WIDTH, TICK_PX, tensor_anchor

pytestmark = pytest.mark.pipeline

_PAGE_CHECK = """JSON.stringify({
  sections: [...document.querySelectorAll('section.tensor')].map(s => {
      const svg = s.querySelector('svg.plot'), box = svg ? svg.getBoundingClientRect() : null;
      const view = svg ? svg.viewBox.baseVal : null;
      return [s.id, [...s.querySelectorAll('svg.plot')].filter(p => p.querySelectorAll('text').length > 0).length,
              box ? box.width : 0, view ? view.width : 0, box ? box.height : 0, view ? view.height : 0];
  }),
  overview: !!document.getElementById('overview'),
  links: [...document.querySelectorAll('#overview a')].map(a => a.getAttribute('href')),
})"""


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    message = "no chromium on PATH: install Debian's chromium package (.ci/run installs it)"
    if os.environ.get("BEAM_TENSORIZE_REQUIRE_BROWSER"):  # CI: the browser must be there
        pytest.fail(message)
    pytest.skip(message)


class _DevTools:
    """A headless browser and one page, over the DevTools protocol (websockets)."""

    def __init__(self, profile: str):
        from websockets.sync.client import connect

        self._process = subprocess.Popen(
            [
                _browser(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline, url = time.monotonic() + 60, None
        while url is None and time.monotonic() < deadline:
            line = self._process.stderr.readline()
            if not line and self._process.poll() is not None:
                break
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            url = found and found.group(1)
        if url is None:
            self.close()
            pytest.fail("chromium did not open its DevTools endpoint")
        self._stack = contextlib.ExitStack()
        self._socket = self._stack.enter_context(connect(url, max_size=None, open_timeout=30))
        self._next = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1200, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    def call(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        self._socket.send(json.dumps(message))
        while True:
            reply = json.loads(self._socket.recv(timeout=60))
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def load(self, path: str) -> list[str]:
        """Open a file; the console errors and uncaught exceptions it gave."""
        self.events.clear()
        self.call("Page.navigate", {"url": "file://" + os.path.abspath(path)}, session=True)
        deadline = time.monotonic() + 60
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            assert time.monotonic() < deadline, "the page did not finish loading"
            self.events.append(json.loads(self._socket.recv(timeout=60)))
        self.call("Runtime.evaluate", {"expression": "1"}, session=True)  # flush pending events
        errors = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif method == "Runtime.exceptionThrown":
                errors.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                errors.append(params["entry"]["text"])
        return errors

    def evaluate(self, expression: str):
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True
        )
        return result["result"]["value"]

    def screenshot(self, path: str) -> None:
        data = self.call(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=True
        )
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))

    def close(self) -> None:
        stack = getattr(self, "_stack", None)
        if stack is not None:
            stack.close()
        self._process.terminate()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    devtools = _DevTools(str(tmp_path_factory.mktemp("chromium-profile")))
    yield devtools
    devtools.close()


def test_the_report_page_loads_without_errors_with_a_plot_per_tensor(tmp_path, browser):
    from tests.report.test_pipelines import train_then_validation

    out = train_then_validation(tmp_path)
    for split in ("trainingData", "validationData"):
        with open(os.path.join(out, "report", f"{split}.json")) as f:
            report = json.load(f)
        page = os.path.join(out, "report", f"{split}.html")
        assert browser.load(page) == []
        found = json.loads(browser.evaluate(_PAGE_CHECK))
        expected = [tensor_anchor(t["name"]) for t in report["tensors"]]
        assert found["overview"] and found["links"] == [f"#{anchor}" for anchor in expected]
        assert [s[0] for s in found["sections"]] == expected
        for anchor, plots, width, natural_width, height, natural_height in found["sections"]:
            # In a 1,200 pixel wide window every plot is shown 560 pixels wide, one drawing
            # pixel per CSS pixel: its tick labels are the 12 pixels they were drawn with (>= 10).
            assert plots == 1 and (width, height) == (natural_width, natural_height), anchor
            assert width == PLOT_WIDTH == 560 and height >= 300 and TICK_PX >= 10, anchor
        shot = tmp_path / f"{split}.png"
        browser.screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_the_browser_check_sees_console_errors_and_missing_sections(tmp_path, browser):
    """The checks above can fail: a page with a console error, and one without sections."""
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><script>console.error('boom')</script></body></html>")
    assert browser.load(str(broken)) == ["boom"]
    assert json.loads(browser.evaluate(_PAGE_CHECK))["sections"] == []
