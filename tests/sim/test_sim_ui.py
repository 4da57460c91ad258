"""The simulator's web UI in a real headless Chromium: the page loads, a run draws its chart.

Also: errors name the field, the table shows units, the form has a shuffle control, and
the charts label their axes (tests/sim/test_sim_ui_server.py checks the server's guards)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

webdriver = pytest.importorskip("selenium.webdriver")

from selenium.webdriver import Chrome  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from streamx.sim.ui import SimServer  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver"
)


@pytest.fixture
def browser() -> Iterator[Chrome]:
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


def test_page_runs_a_simulation_and_draws_the_chart(browser: Chrome, server: SimServer) -> None:
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


def test_bad_parameters_show_an_error(browser: Chrome, server: SimServer) -> None:
    browser.get(server.url)
    nodes = browser.find_element(By.NAME, "bandwidth")
    nodes.clear()
    nodes.send_keys("lots")
    browser.find_element(By.ID, "run").click()
    error = browser.find_element(By.ID, "error")
    WebDriverWait(browser, 30).until(lambda _: "bandwidth" in error.text)
    assert "'lots'" in error.text


def test_a_bad_integer_names_its_field(browser: Chrome, server: SimServer) -> None:
    browser.get(server.url)
    workers = browser.find_element(By.NAME, "workers")
    workers.clear()
    workers.send_keys("two")
    browser.find_element(By.ID, "run").click()
    error = browser.find_element(By.ID, "error")
    WebDriverWait(browser, 30).until(lambda _: "workers per device" in error.text)
    assert "invalid literal" not in error.text


def _small_run(browser: Chrome, shuffle: str) -> str:
    samples = browser.find_element(By.NAME, "samples")
    samples.clear()
    samples.send_keys("20k")
    shard = browser.find_element(By.NAME, "shard_samples")
    shard.clear()
    shard.send_keys("1000")
    browser.find_element(By.CSS_SELECTOR, f"select[name=shuffle] option[value={shuffle}]").click()
    browser.find_element(By.ID, "run").click()
    chart = browser.find_element(By.ID, "chart")
    WebDriverWait(browser, 60).until(lambda _: chart.get_attribute("data-ready") == "1")
    return str(browser.find_element(By.ID, "summary").text)


def test_shuffle_control_units_and_axis_labels(
    browser: Chrome, server: SimServer, tmp_path: Path
) -> None:
    browser.set_window_size(1300, 1000)
    browser.get(server.url)
    plain = _small_run(browser, "false")
    shuffled = _small_run(browser, "true")
    # In order, each node reads a few shards at once; shuffled, many: a larger cache.
    assert plain != shuffled
    for table in (plain, shuffled):
        assert "GiB" in table or "MiB" in table
        assert " s" in table and "samples/s" in table
        assert "0000000" not in table  # no raw floats or byte counts
    chart = browser.find_element(By.ID, "chart")
    downloads = browser.find_element(By.ID, "bytes")
    assert chart.get_attribute("data-ylabel") == "samples/s (10-step mean)"
    assert chart.get_attribute("data-xlabel") == "step (global batch)"
    assert downloads.get_attribute("data-ylabel") == "downloaded, all nodes (GiB)"
    shot = tmp_path / "ui.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
