"""End to end in a real browser: headless Chromium loads the demo, submits a request, sees the map.

Skipped (with the reason) where Chromium, chromedriver or selenium is missing;
``.ci/run`` installs Chromium (``apt-get install chromium chromium-driver``).
The screenshot is saved as ``tests/artifacts/ui_browser.png``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from fakes.servers import FakeNominatim, FakeOverpass, json_reply
from fakes.support import dev_requests, free_port, make_service

from geoql.app.ui import launch

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def _missing() -> str | None:
    if CHROMIUM is None or CHROMEDRIVER is None:
        return "Chromium/chromedriver not installed (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium not installed (pip install -e '.[dev]')"
    return None


@pytest.mark.skipif(_missing() is not None, reason=_missing() or "")
def test_request_to_map_in_headless_chromium(tmp_path, small_index_dir):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    overpass, nominatim = FakeOverpass().start(), FakeNominatim().start()
    overpass.default = json_reply("heidelberg_cafes.json")
    port = free_port()
    demo = launch(make_service(overpass, nominatim, tmp_path / "cache", index_dir=small_index_dir), port=port, block=False)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1400,1700", f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path)}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(120)
        driver.get(f"http://127.0.0.1:{port}/")
        wait = WebDriverWait(driver, 120)
        box = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#request textarea")))
        box.send_keys(dev_requests()[0].nl)
        driver.find_element(By.CSS_SELECTOR, "#compile-and-run").click()
        frame = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "iframe.geoql-map[data-features='4']")))
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", frame)
        driver.switch_to.frame(frame)
        # Leaflet ran inside the frame and drew the four features (no tiles needed).
        wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-features") == "4")
        drawn = driver.find_elements(By.CSS_SELECTOR, "path.leaflet-interactive")
        assert len(drawn) == 4
        driver.switch_to.default_content()
        assert "Café Frisch" in driver.find_element(By.CSS_SELECTOR, "#elements").text
        assert driver.find_element(By.CSS_SELECTOR, "#request textarea").get_attribute("value") == dev_requests()[0].nl
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "ui_browser.png"
        tmp_shot = ARTIFACTS / ".ui_browser.tmp.png"
        assert driver.save_screenshot(str(tmp_shot))
        tmp_shot.replace(shot)
        assert shot.stat().st_size > 10_000
    finally:
        driver.quit()
        demo.close()
        overpass.stop()
        nominatim.stop()
