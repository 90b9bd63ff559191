#!/usr/bin/python3
"""Checks the built site as a reader would: serves build/site on localhost, opens pages in a
headless Chromium (Debian's `chromium`), and fails unless each page rendered, is not blank, and
every image on it loaded.

  /usr/bin/python3 tools/site_check.py [--site build/site] [--out build/site-check] [PAGE ...]

PAGE defaults to the home page and the validation page. For each it writes a screenshot
(<out>/<name>.png) and checks it is not a blank canvas; a same-origin probe page loads PAGE in an
iframe and reports the images that failed to load (`--dump-dom` prints the probe's verdict).
"""
import argparse
import functools
import http.server
import pathlib
import re
import shutil
import subprocess
import sys
import threading

PROBE = """<!doctype html><html><body><pre id="verdict">PENDING</pre>
<iframe id="f" style="width:1280px;height:2000px"></iframe>
<script>
const page = new URLSearchParams(location.search).get("page");
const f = document.getElementById("f");
const v = document.getElementById("verdict");
f.onload = () => {
  const imgs = Array.from(f.contentDocument.images);
  const wait = imgs.map(i => i.complete ? Promise.resolve() :
      new Promise(r => { i.onload = r; i.onerror = r; }));
  Promise.all(wait).then(() => {
    const bad = imgs.filter(i => !(i.naturalWidth > 0)).map(i => i.getAttribute("src"));
    const text = (f.contentDocument.body.innerText || "").trim().length;
    v.textContent = (bad.length === 0 && text > 200 ? "SITE-OK" : "SITE-BAD") +
        " images=" + imgs.length + " text=" + text + " failed=" + JSON.stringify(bad);
  });
};
f.src = page;
</script></body></html>
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("site_check: no chromium on PATH (apt-get install chromium)")


def blank(png):
    import matplotlib.image as mpimg  # Debian's python3-matplotlib

    a = mpimg.imread(png)
    return a.size == 0 or float(a[..., :3].std()) < 0.01


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--site", default="build/site")
    ap.add_argument("--out", default="build/site-check")
    ap.add_argument("pages", nargs="*", default=["", "validation/"])
    a = ap.parse_args()
    site = pathlib.Path(a.site).resolve()
    out = pathlib.Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if not (site / "index.html").exists():
        sys.exit(f"site_check: {site}/index.html is missing (mkdocs build --strict first)")
    (site / "_probe.html").write_text(PROBE)
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    exe = chromium()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--virtual-time-budget=15000"]
    failed = False
    try:
        for page in a.pages:
            name = page.strip("/").replace("/", "_") or "home"
            png = out / f"{name}.png"
            if png.exists():
                png.unlink()
            subprocess.run([exe, *flags, "--window-size=1280,1600", f"--screenshot={png}", base + page],
                           capture_output=True, timeout=120)
            dom = subprocess.run([exe, *flags, "--dump-dom", f"{base}_probe.html?page=/{page}"],
                                 capture_output=True, text=True, timeout=120).stdout
            verdict = next((l for l in dom.splitlines() if "SITE-" in l), "no verdict (the probe did not run)")
            verdict = re.sub(r"<[^>]*>", "", verdict).strip()
            ok_png = png.exists() and png.stat().st_size > 0 and not blank(png)
            ok = ok_png and "SITE-OK" in verdict
            failed |= not ok
            print(f"site_check: /{page}: screenshot {'ok' if ok_png else 'BLANK OR MISSING'} ({png}); "
                  f"{verdict}")
    finally:
        server.shutdown()
        (site / "_probe.html").unlink()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
