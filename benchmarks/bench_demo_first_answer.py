"""The README's main command from nothing: how long until the demo answers its first request.

    scripts/setup.sh                     # in a fresh clone (the README's first command)
    GEOQL_DATA_DIR=../shared/overpassnl .venv/bin/python benchmarks/bench_demo_first_answer.py \\
        --checkout FRESH_CLONE [--before OLD_CLONE] [--request "pubs in Dublin"] [--shots DIR]

It starts ``FRESH_CLONE/.venv/bin/geoql ui`` with a new, empty ``$HOME`` (so the tag index,
the CPU model and every cache are made from scratch, as on a new machine), opens the page
in headless Chromium (selenium, from ``scripts/setup.sh --dev`` of the interpreter running
this), types the request as soon as the page serves and clicks Compile as soon as it is
enabled. It prints when the page served, what the preparation showed along the way, when
the button was enabled, and when the first answer was on the page, all counted from the
command's start. Needs Chromium and chromedriver (Debian packages).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serves(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def _browser(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--window-size=1400,1600", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", default=str(REPO), help="a clone after scripts/setup.sh (default: this one)")
    parser.add_argument("--request", default="pubs in Dublin")
    parser.add_argument("--timeout", type=float, default=3600, help="give up after this many seconds (default 3600)")
    parser.add_argument("--sample-s", type=float, default=60, help="print the preparation shown every N s (default 60)")
    parser.add_argument("--shots", help="save a screenshot of the preparation and of the answer here")
    parser.add_argument("--index-dir", help="use this built tag index (GEOQL_INDEX_DIR) instead of building one: "
                                             "then only the models are trained")
    parser.add_argument("--wait-full", action="store_true",
                        help="after the first answer (a quick model's), wait until the full model has taken over "
                             "and compile the request again")
    parser.add_argument("--before", metavar="CHECKOUT",
                        help="first measure this clone (after its scripts/setup.sh) the same way, then --checkout, "
                             "and print both with their ratio")
    args = parser.parse_args(argv)
    if args.shots:
        Path(args.shots).mkdir(parents=True, exist_ok=True)
    sides = ([("before", args.before)] if args.before else []) + [("after" if args.before else "this", args.checkout)]
    for _, checkout in sides:  # both installed before minutes of measuring
        if not (Path(checkout).resolve() / ".venv" / "bin" / "geoql").exists():
            raise SystemExit(f"{checkout}/.venv/bin/geoql is missing: run scripts/setup.sh in {checkout} first")
    results = {}
    for name, checkout in sides:
        print(f"== {name}: {checkout}", flush=True)
        shots = str(Path(args.shots) / name) if args.shots and args.before else args.shots
        results[name] = _first_answer(checkout, args, shots)
    if args.before:
        print(f"{'':8} {'page serves':>12} {'Compile enabled':>16} {'first answer':>13}")
        for name, times in results.items():
            print(f"{name:8} {times['serves']:11.1f}s {times['enabled']:15.1f}s {times['answer']:12.1f}s")
        before, after = results["before"]["answer"], results["after"]["answer"]
        print(f"first answer before/after: {before / after:.2f}x (after/before {after / before:.2f}; "
              f"from `geoql ui` starting, {after:.1f} s against {before:.1f} s)")
    return 0


def _first_answer(checkout: str, args, shots: str | None) -> dict:
    """One fresh start of ``checkout``'s demo, driven to its first answer; the times from the command's start."""
    from selenium.webdriver.common.by import By  # the test tools (scripts/setup.sh --dev), not GeoQL's
    from selenium.webdriver.support.ui import WebDriverWait

    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
    geoql = Path(checkout).resolve() / ".venv" / "bin" / "geoql"
    times: dict[str, float] = {}
    home = Path(tempfile.mkdtemp(prefix="geoql-demo-home-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "GEOQL_")) or k == "GEOQL_DATA_DIR"}
    env.update(HOME=str(home), HF_HUB_OFFLINE="1")
    if args.index_dir:
        env["GEOQL_INDEX_DIR"] = str(Path(args.index_dir).resolve())
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    log = open(home / "ui.log", "wb")
    start = time.monotonic()
    server = subprocess.Popen([str(geoql), "ui", "--port", str(port)], env=env, cwd=checkout,
                              stdout=log, stderr=subprocess.STDOUT)
    driver, answered = None, False

    def since() -> float:
        return time.monotonic() - start

    try:
        while not _serves(url):
            if server.poll() is not None or since() > args.timeout:
                raise SystemExit(f"the demo never served (exit {server.poll()}); log: {home / 'ui.log'}")
            time.sleep(0.5)
        times["serves"] = since()
        print(f"{since():7.1f} s  the page serves ({url})", flush=True)
        driver = _browser(home / "chromium")
        driver.get(url)
        # The page draws itself with JavaScript after it loads.
        box = WebDriverWait(driver, 120).until(lambda d: d.find_element(By.CSS_SELECTOR, "#request textarea"))
        box.send_keys(args.request)
        # The buttons are drawn enabled and the page's load event then sets them from the preparation's
        # state: give it that moment, or a click lands before the page knows it is getting ready.
        time.sleep(3.0)
        button = driver.find_element(By.CSS_SELECTOR, "#compile")
        next_sample, shot = 0.0, False
        while not (button.is_enabled() and button.text == "Compile"):
            if since() >= next_sample:
                shown = driver.find_element(By.CSS_SELECTOR, "#readiness").text.strip().replace("\n", "\n           ")
                print(f"{since():7.1f} s  page shows: {shown or '(nothing)'}; button: {button.text!r}", flush=True)
                if shots and not shot and shown:
                    shot = driver.save_screenshot(str(Path(shots) / "first_start_preparing.png"))
                next_sample = since() + args.sample_s
            if server.poll() is not None or since() > args.timeout:
                raise SystemExit(f"the demo never got ready (exit {server.poll()}); log: {home / 'ui.log'}")
            time.sleep(1.0)
        times["enabled"] = since()
        print(f"{since():7.1f} s  Compile is enabled", flush=True)
        button.click()
        while True:
            query = driver.find_element(By.CSS_SELECTOR, "#query textarea").get_attribute("value")
            status = driver.find_element(By.CSS_SELECTOR, "#status").text
            if query.strip() and status.strip():
                break
            if since() > args.timeout:
                raise SystemExit("no answer on the page")
            time.sleep(0.2)
        times["answer"] = since()
        print(f"{since():7.1f} s  first answer on the page: {status.splitlines()[0]}", flush=True)
        print("           " + query.replace("\n", "\n           "))
        if shots:
            driver.save_screenshot(str(Path(shots) / "first_answer.png"))
        note = driver.find_element(By.CSS_SELECTOR, "#readiness").text.strip()
        if note:
            print(f"{since():7.1f} s  page shows: {note}", flush=True)
        if args.wait_full:
            shot = False
            while (shown := driver.find_element(By.CSS_SELECTOR, "#readiness").text.strip()):
                if shots and not shot and "scoring" in shown:  # the full training's progress under the note
                    shot = driver.save_screenshot(str(Path(shots) / "full_model_training.png"))
                    print(f"{since():7.1f} s  page shows: {shown}", flush=True)
                if server.poll() is not None or since() > args.timeout:
                    raise SystemExit("the full model never took over")
                time.sleep(2.0)
            print(f"{since():7.1f} s  the full model has taken over (the page's note is gone)", flush=True)
            button.click()
            old = query
            time.sleep(5.0)  # a compile takes a fraction of a second; the page then shows the new answer
            query = driver.find_element(By.CSS_SELECTOR, "#query textarea").get_attribute("value")
            print(f"{since():7.1f} s  answer of the full model ({'the same' if query == old else 'changed'}):")
            print("           " + query.replace("\n", "\n           "))
        answered = True
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        if answered:
            shutil.rmtree(home, ignore_errors=True)
        else:  # what the server said is the way to why
            print(f"the server's log stays in {home / 'ui.log'}", file=sys.stderr)
    return times


if __name__ == "__main__":
    sys.exit(main())
