"""A real browser for the tests: headless Chromium driven over the DevTools protocol (CDP).

No browser-automation package: CDP is JSON over one websocket, and aiohttp (which textual-serve needs
anyway) speaks websockets. Chromium is started with a throw-away profile and `--remote-debugging-port=0`;
the port it picked is read from `DevToolsActivePort` in that profile. Every wait has a deadline.

Chromium's own temporary files (its SingletonSocket directory, `org.chromium.Chromium.XXXXXX`, which it
does not remove when stopped by a signal: every test run left one in /tmp) go into a TMPDIR inside the
profile, removed with it, also when Chromium fails to start (issue 34).

The terminal in the page is xterm.js drawing on a canvas, so the page has no text to read. What the
browser received is read from the protocol instead: `Network.webSocketFrameReceived` hands over every
frame of the app's websocket (the terminal output, escape sequences and all); `Page.captureScreenshot`
gives the pixels.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import aiohttp

CHROMIUM = os.environ.get("PINSCOPE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio"]
# Chromium's SingletonSocket is TMPDIR + /org.chromium.Chromium.XXXXXX/SingletonSocket (46 bytes), and a
# socket's path is at most 107 bytes (sun_path): a longer TMPDIR makes Chromium abort at start
SOCKET_ROOM = 107 - 46
ANSI = re.compile(r"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])")


def screen_text(raw: bytes) -> str:
    """Terminal output with the escape sequences taken out: enough to find the words the app wrote."""
    return ANSI.sub(" ", raw.decode("utf-8", "replace"))


class Browser:
    """One headless Chromium with one page. Use as `async with Browser() as b:`."""

    def __init__(self, width: int = 1600, height: int = 1000) -> None:
        self.width, self.height = width, height
        self.proc: subprocess.Popen | None = None
        self.profile: str | None = None  # made when entered: a Browser never entered leaves nothing
        self.own_tmp: str | None = None  # Chromium's TMPDIR when the profile's path is too long for it
        self.session: aiohttp.ClientSession | None = None
        self.ws = None
        self.ids = 0
        self.pending: dict[int, asyncio.Future] = {}
        self.received = bytearray()  # every binary frame of the page's websockets, in order
        self.sent: list[str] = []  # every text frame the page sent
        self.console: list[str] = []
        self._reader: asyncio.Task | None = None

    async def __aenter__(self) -> "Browser":
        try:
            return await self._start()
        except BaseException:
            await self.__aexit__()  # the process group and the profile, whatever failed
            raise

    async def _start(self) -> "Browser":
        self.profile = tempfile.mkdtemp(prefix="pinscope-chromium-")
        tmp = Path(self.profile) / "t"
        tmp.mkdir()
        if len(str(tmp)) > SOCKET_ROOM:  # the socket's path would not fit: a short directory of its own
            tmp = Path(tempfile.mkdtemp(prefix="pc-", dir="/tmp"))
            self.own_tmp = str(tmp)
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
             f"--window-size={self.width},{self.height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "TMPDIR": str(tmp)})
        port_file = Path(self.profile) / "DevToolsActivePort"
        end = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            if time.monotonic() > end:
                raise TimeoutError("chromium did not open its DevTools port in 60 s")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as r:
            pages = [t for t in await r.json() if t.get("type") == "page"]
        self.ws = await self.session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        await self.send("Network.enable")
        await self.send("Page.enable")
        await self.send("Runtime.enable")
        await self.send("Emulation.setDeviceMetricsOverride",
                        width=self.width, height=self.height, deviceScaleFactor=1, mobile=False)
        return self

    async def __aexit__(self, *exc) -> None:
        if self._reader:
            self._reader.cancel()
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()
        if self.proc is not None:
            # chromium's whole process group (renderers, GPU, zygote), waited for off the event loop
            from helpers import stop

            try:
                await asyncio.to_thread(stop, self.proc, 10, signal.SIGTERM)
            finally:
                await asyncio.to_thread(stop, self.proc, 5)  # SIGKILL to whatever is left of the group
        for d in (self.profile, self.own_tmp):
            for _ in range(50):  # a child of the group may still be writing into it for a moment
                if d is None or not os.path.lexists(d):
                    break
                shutil.rmtree(d, ignore_errors=True)
                await asyncio.sleep(0.1)

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            m = json.loads(msg.data)
            if "id" in m:
                fut = self.pending.pop(m["id"], None)
                if fut is not None and not fut.done():
                    if "error" in m:
                        fut.set_exception(RuntimeError(f"CDP error: {m['error']}"))
                    else:
                        fut.set_result(m.get("result", {}))
                continue
            method, params = m.get("method"), m.get("params", {})
            if method == "Network.webSocketFrameReceived":
                r = params["response"]
                if r.get("opcode") == 2:
                    self.received += base64.b64decode(r["payloadData"])
            elif method == "Network.webSocketFrameSent":
                self.sent.append(params["response"].get("payloadData", ""))
            elif method == "Runtime.consoleAPICalled":
                self.console.append(" ".join(str(a.get("value", "")) for a in params.get("args", [])))

    async def send(self, method: str, timeout: float = 30, **params) -> dict:
        self.ids += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.ids] = fut
        await self.ws.send_str(json.dumps({"id": self.ids, "method": method, "params": params}))
        return await asyncio.wait_for(fut, timeout)

    async def goto(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def eval(self, expression: str):
        r = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        return r.get("result", {}).get("value")

    async def wait_js(self, expression: str, timeout: float = 30) -> None:
        end = time.monotonic() + timeout
        while not await self.eval(expression):
            if time.monotonic() > end:
                raise TimeoutError(f"{expression} still false after {timeout} s")
            await asyncio.sleep(0.2)

    def text(self, since: int = 0) -> str:
        return screen_text(bytes(self.received[since:]))

    async def wait_text(self, *needles: str, since: int = 0, timeout: float = 30) -> str:
        end = time.monotonic() + timeout
        while True:
            t = self.text(since)
            if all(n in t for n in needles):
                return t
            if time.monotonic() > end:
                raise TimeoutError(f"{needles} not in what the page received after {timeout} s:\n{t[-2000:]}")
            await asyncio.sleep(0.2)

    async def type(self, text: str) -> None:
        """Keys as a person types them, into the focused element (xterm's hidden textarea)."""
        for ch in text:
            await self.send("Input.dispatchKeyEvent", type="keyDown", key=ch, text=ch, unmodifiedText=ch)
            await self.send("Input.dispatchKeyEvent", type="keyUp", key=ch)

    async def screenshot(self, path: Path) -> bytes:
        png = base64.b64decode((await self.send("Page.captureScreenshot", format="png"))["data"])
        Path(path).write_bytes(png)
        return png
