"""The simulator's web UI in a real headless Chromium: the page loads, a run draws its chart."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

webdriver = pytest.importorskip("selenium.webdriver")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from streamx.sim.ui import SimServer  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver"
)


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(
        service=webdriver.ChromeService(executable_path=str(DRIVER)), options=options
    )
    yield driver
    driver.quit()


@pytest.fixture
def server() -> Iterator[SimServer]:
    srv = SimServer(0)
    yield srv
    srv.close()


def test_page_runs_a_simulation_and_draws_the_chart(
    browser: webdriver.Chrome, server: SimServer
) -> None:
    browser.get(server.url)
    assert browser.title == "streamx simulator"
    samples = browser.find_element(By.NAME, "samples")
    samples.clear()
    samples.send_keys("100k")
    compare = browser.find_element(By.NAME, "compare")
    compare.send_keys("shuffle_algo=py1e,py1s")
    browser.find_element(By.ID, "run").click()
    chart = browser.find_element(By.ID, "chart")
    WebDriverWait(browser, 60).until(lambda _: chart.get_attribute("data-ready") == "1")
    # The canvas has drawn pixels, and the table lists both compared runs.
    painted = browser.execute_script(
        "const c = document.getElementById('chart');"
        "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        "let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n;"
    )
    assert painted > 1000
    table = browser.find_element(By.ID, "summary").text
    assert "shuffle_algo=py1e" in table and "shuffle_algo=py1s" in table
    assert browser.find_element(By.ID, "error").text == ""


def test_bad_parameters_show_an_error(browser: webdriver.Chrome, server: SimServer) -> None:
    browser.get(server.url)
    nodes = browser.find_element(By.NAME, "bandwidth")
    nodes.clear()
    nodes.send_keys("lots")
    browser.find_element(By.ID, "run").click()
    error = browser.find_element(By.ID, "error")
    WebDriverWait(browser, 30).until(lambda _: "Unsupported value" in error.text)
