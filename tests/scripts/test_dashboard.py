"""scripts/dashboard.py: a fake sweep of two runs becomes one self-contained page that headless Chromium renders."""
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gan.analysis.channels import DeadChannelTracker, LayerStats, channel_matrix, heatmap_image, heatmap_png
from gan.analysis.charts import line_style
from gan.analysis.dashboard import build_dashboard, screenshot
from gan.analysis.runs import Run, find_runs, group_runs, load_run
from gan.core.atomic import write_text_atomic
from gan.run.files import append_jsonl, losses_record, read_jsonl
from tests.helpers import run_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "dashboard.py"
LAYERS = {"G/act0": 16, "G/act1": 8, "D/act0": 8, "D/act1": 16}
STEPS = range(100, 1100, 100)


def fake_run(run_dir: Path, slope: float, seed: int, overrides: list[str] | None = None,
             events: list[dict] | None = None, slopes: bool = False) -> None:
    """A run directory as training writes it: config, diagnostics/losses/metrics jsonl, a sample grid.

    With `overrides` the run is a Hydra job (.hydra/overrides.yaml); `events` become events.jsonl; `slopes`
    adds learned per-channel slopes of D/act1 to each diagnostics record (an adaptive activation).
    """
    rng = np.random.default_rng(seed)
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "config.yaml").write_text(
        f"act:\n  negative_slope: {slope}\nprecision:\n  name: fp32\nmodel:\n  image_size: 32\n  ngf: 32\n"
        f"seed: {seed}\n")
    if overrides is not None:
        (run_dir / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    tracker = DeadChannelTracker()
    for check, step in enumerate(STEPS):
        stats = {}
        for layer, channels in LAYERS.items():
            # With slope 0 more channels drift to always-negative as training goes on, and dead channels go
            # silent (output 0; dL/dy still arrives from the next layer); with slope 0.2 they stay dead but
            # keep passing signal.
            dying = int(channels * (0.5 if slope == 0 else 0.1) * check / 9)
            neg = rng.uniform(0.3, 0.7, channels)
            neg[:dying] = 1.0
            out, grad = rng.uniform(0.5, 1.5, channels), rng.uniform(0.5, 1.5, channels)
            if slope == 0:
                out[:dying] = 0.0
            stats[layer] = LayerStats(neg, out, grad, 3, 3, None, None)
        record = tracker.update(step, stats)
        if slopes:
            record["slopes"] = {"D/act1": [0.2 + 0.01 * check * c / 16 for c in range(16)]}
        append_jsonl(run_dir / "diagnostics.jsonl", record)
        append_jsonl(run_dir / "losses.jsonl", {"step": step, "loss_d": 1.0 + rng.normal() * 0.1,
                                                "loss_g": 2.0 + rng.normal() * 0.1, "d_x": 0.7, "d_g_z": 0.3})
        if step % 200 == 0:
            append_jsonl(run_dir / "metrics.jsonl", {"step": step, "class_coverage": 0.5 + step / 2000,
                                                     "frechet_distance": 100.0 - step / 20})
    (run_dir / "metrics.json").write_text('{"class_coverage": 1.0, "frechet_distance": 50.0}')
    for event in events or []:
        append_jsonl(run_dir / "events.jsonl", event)
    (run_dir / "samples").mkdir()
    Image.fromarray(rng.integers(0, 255, (66, 66, 3), np.uint8)).save(run_dir / "samples" / "step_001000.png")


# As gan.run.files.record_resume / nonfinite_detail write them; `recycle` as the activation work plans it.
RESUME_EVENTS = [{"step": 500, "kind": "resume", "detail": {"checkpoint": "checkpoints/step_00000500.ckpt"}},
                 {"step": 500, "kind": "resume_override", "detail": {"changed": {"train.lr": [0.0002, 0.0001]}}},
                 {"step": 700, "kind": "nonfinite_skip", "detail": {"networks": ["D"],
                                                                    "loss_scale": {"D": 1024.0, "G": None}}},
                 {"step": 900, "kind": "recycle", "detail": {"layer": "D/act1", "channels": [0, 1]}}]


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """Two runs without Hydra overrides (grouped by their config hparams)."""
    root = tmp_path / "multirun"
    fake_run(root / "0", 0.0, 0)
    fake_run(root / "1", 0.2, 1)
    return root


@pytest.fixture
def seeded_sweep(tmp_path: Path) -> Path:
    """A Hydra sweep: slope 0 and 0.2 x seeds 0, 1; one run with events, one with learned slopes."""
    root = tmp_path / "seeded"
    for job, (slope, seed) in enumerate((s, r) for s in (0.0, 0.2) for r in (0, 1)):
        fake_run(root / str(job), slope, seed, [f"act.negative_slope={slope}", f"seed={seed}", "data=mnist"],
                 events=RESUME_EVENTS if job == 1 else None, slopes=job == 3)
    return root


def test_page_compares_runs_and_is_self_contained(sweep):
    page = build_dashboard(sweep)
    assert page.count('<table class="runs"') == 1
    # One chart per layer and statistic, two quality metrics over time, four loss/D-output charts.
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" viewBox') == 4 * len(LAYERS) + 2 + 4
    # Heatmaps: neg_frac, dormant and gradient scores per layer and run; one sample per run.
    assert page.count('class="heatmap"') == 3 * 2 * len(LAYERS) and page.count("samples of") == 2
    # No overrides: the runs are grouped by their config hparams, the slope being the one that differs.
    assert "act.negative_slope=0.0" in page and "act.negative_slope=0.2" in page and "class_coverage" in page
    assert not re.search(r"(src|href)=\"(?!data:)", page) and "<script" not in page
    runs = page.split('<table class="runs"')[1].split("</table>")[0]
    # Final dead fractions in the run table: slope 0 lost half its G channels, slope 0.2 one of 24.
    assert "G 50.0%" in runs and "G 4.2%" in runs


def test_seeds_form_groups_drawn_as_mean_and_band(seeded_sweep):
    page = build_dashboard(seeded_sweep)
    legend = page.split('<div class="legend-list">')[1].split("</div>")[0]
    assert legend.count("<span>") == 2 and "2 runs, seeds 0, 1" in legend
    assert "common settings: data=mnist" in page and "2 groups by act.negative_slope" in page
    # The charts draw one mean line per group, and a band where the seeds differ (the losses are noisy).
    loss_chart = page.split("<title>loss D</title>")[1].split("</svg>")[0]
    assert loss_chart.count("<polyline") == 2 and loss_chart.count("<polygon") == 2
    # Slope 0: dead channels are also dormant (dL/dy still arrives, so not grad-dead); slope 0.2: dead only.
    runs = page.split('<table class="runs"')[1].split("</table>")[0]
    cells = [[c.split("</td>")[0] for c in row.split("<td>")[1:]] for row in runs.split("<tr>")[2:]]
    assert cells[0][5:8] == ["G 50.0%<br>D 50.0%"] * 2 + ["G 0.0%<br>D 0.0%"]  # slope 0: dead = dormant
    assert cells[2][5:8] == ["G 4.2%<br>D 4.2%", "G 0.0%<br>D 0.0%", "G 0.0%<br>D 0.0%"]  # slope 0.2


def test_events_and_learned_slopes_are_drawn(seeded_sweep):
    page = build_dashboard(seeded_sweep)
    # Both events of step 500 (resume, then resume with changed settings) are kept and marked on every chart.
    charts = page.count('<svg xmlns="http://www.w3.org/2000/svg" viewBox')
    assert page.count('<g class="event">') == 4 * charts
    assert "resume_override at step 500" in page and "Event markers: <b>R</b> resume" in page
    events = page.split('<table class="events">')[1].split("</table>")[0]
    assert events.count("<tr>") == 1 + len(RESUME_EVENTS) and "train.lr" in events
    # The run with learned slopes gets a fourth tab with D/act1's slopes; the others have three.
    assert page.count('class="tab-slopes"') == 1 and page.count('class="tab-neg_frac"') == 4
    assert 'alt="D/act1 learned slope"' in page and "0.2&ndash;0.284" in page  # the run's slope range


def test_single_run_directory_and_errors(sweep, tmp_path):
    assert find_runs(sweep / "1") == [sweep / "1"]
    page = build_dashboard(sweep / "1")
    assert page.count('<table class="runs"') == 1 and page.count('class="heatmap"') == 3 * len(LAYERS)
    assert "1 run" in page
    with pytest.raises(FileNotFoundError, match="no run found"):
        build_dashboard(tmp_path / "multirun" / "0" / "samples")
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        build_dashboard(tmp_path / "missing")


def test_jsonl_reader_tolerates_only_a_partial_last_line(tmp_path):
    path = tmp_path / "d.jsonl"
    for step in (1, 2, 1):
        append_jsonl(path, {"step": step, "v": step * 10})
    path.write_text(path.read_text() + '{"step": 3, "v"')  # crash mid-write
    assert read_jsonl(path) == [{"step": 1, "v": 10}, {"step": 2, "v": 20}]  # last record per step wins
    path.write_text('{"step": 1}\nnot json\n{"step": 2}\n')
    with pytest.raises(ValueError, match="d.jsonl:2"):
        read_jsonl(path)


def test_heatmap_rows_are_channels_and_colour_follows_neg_frac():
    image = heatmap_image(np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]))
    assert image.shape == (3 * 8, 2 * 8, 3)
    assert tuple(image[0, 0]) == (68, 1, 84) and tuple(image[0, 15]) == (253, 231, 37)
    assert heatmap_image(np.zeros((1024, 3)), max_size=256).shape == (256, 3 * 8, 3)
    with pytest.raises(ValueError, match="shape"):
        heatmap_image(np.zeros(3))


def test_heatmap_png_is_one_pixel_per_cell_with_grey_for_missing_values():
    image = Image.open(io.BytesIO(heatmap_png(np.array([[0.0, 1.0, np.nan]]))))
    assert image.mode == "P" and image.size == (3, 1)
    assert [image.convert("RGB").getpixel((x, 0)) for x in range(3)] == [(68, 1, 84), (253, 231, 37), (200, 200, 200)]
    big = Image.open(io.BytesIO(heatmap_png(np.zeros((1200, 1000)))))
    assert big.size == (334, 400)  # averaged in blocks of 3 x 3 to fit 480 checks x 512 channels


def test_channel_matrix_reads_each_statistic_and_nulls(seeded_sweep):
    records = [json.loads(line) for line in (seeded_sweep / "3" / "diagnostics.jsonl").read_text().splitlines()]
    records[0]["layers"]["D/act1"]["grad_score"][2] = None
    grad, steps = channel_matrix(records, "D/act1", "grad_score")
    assert grad.shape == (16, len(STEPS)) and steps == list(STEPS) and np.isnan(grad[2, 0])
    slopes, _ = channel_matrix(records, "D/act1", "slopes")
    assert slopes[15, -1] == pytest.approx(0.2 + 0.09 * 15 / 16)
    with pytest.raises(ValueError, match="'G/act0' has no 'slopes'"):
        channel_matrix(records, "G/act0", "slopes")


def test_thirty_groups_get_thirty_distinct_line_styles():
    runs = [Run(Path(str(i)), str(i), settings={"train.lr": str(i), "seed": "0"}) for i in range(30)]
    groups, common, varied = group_runs(runs)
    assert varied == ["train.lr"] and common == {} and len({line_style(g) for g in groups}) == 30


@pytest.mark.slow
def test_cli_writes_the_page_atomically_and_rejects_an_empty_directory(sweep, tmp_path):
    env = {**os.environ, "GLOG_v": "3"}
    out = tmp_path / "report.html"
    done = subprocess.run([sys.executable, str(SCRIPT), str(sweep), "--out", str(out)], env=env,
                          capture_output=True, text=True, check=True)
    assert f"wrote {out}" in done.stdout and out.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report")] == []
    empty = tmp_path / "empty"
    empty.mkdir()
    failed = subprocess.run([sys.executable, str(SCRIPT), str(empty)], env=env, capture_output=True, text=True)
    assert failed.returncode == 2 and "no run found" in failed.stderr


def chrome(width: int = 1400, height: int = 1000):
    """Headless Chromium driven through Debian's chromium-driver (Selenium), window `width` x `height`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    assert binary and driver, ("this test needs Debian's chromium and chromium-driver "
                               "(.ci/run installs them: apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", f"--window-size={width},{height}"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(driver))


@pytest.mark.slow
def test_real_browser_30_runs_fit_1400_px_images_load_and_tabs_switch(tmp_path):
    from selenium.webdriver.common.by import By

    root = tmp_path / "sweep30"
    for job in range(30):  # 15 settings x 2 seeds; one run with events, one with learned slopes
        setting, seed = divmod(job, 2)
        fake_run(root / str(job), 0.0 if setting < 8 else 0.2, seed,
                 [f"act.negative_slope={0.0 if setting < 8 else 0.2}", f"train.lr={0.0001 * (setting + 1):.4f}",
                  f"seed={seed}", "data=mnist"], events=RESUME_EVENTS if job == 1 else None, slopes=job == 0)
    page = write_text_atomic(tmp_path / "report.html", build_dashboard(root))
    driver = chrome()
    try:
        driver.get(page.as_uri())
        width, scroll = driver.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
        assert width == 1400 and scroll <= width, f"horizontal scroll: page {scroll} px wide in a {width} px window"
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight])")
        assert len(images) == 3 + 30 * 3 * len(LAYERS) + 1 + 30  # overview, heatmaps, D/act1 slopes of run 0, samples
        assert [i for i in images if not (i[1] and i[2] > 0 and i[3] > 0)] == []
        charts = driver.execute_script("return Array.from(document.querySelectorAll('svg.chart')).map("
                                       "s => {const r = s.getBoundingClientRect(); return [r.width, r.height]})")
        assert len(charts) == 4 * len(LAYERS) + 2 + 4
        assert min(w for w, _ in charts) > 150 and min(h for _, h in charts) > 60
        assert len(driver.find_elements(By.CSS_SELECTOR, ".legend-list > span")) == 15

        def shown(run: int) -> dict[str, list[str]]:
            """Visible heatmap panels of a run and the alt texts of their images that have a rendered size."""
            panels = driver.find_elements(By.CSS_SELECTOR, f"#heatmaps-{run} .panel")
            return {p.get_attribute("data-kind"): [i.get_attribute("alt") for i in p.find_elements(By.TAG_NAME, "img")
                                                   if i.size["width"] > 0 and i.size["height"] > 0]
                    for p in panels if p.is_displayed()}

        assert shown(0) == {"neg_frac": [f"{layer} neg_frac" for layer in LAYERS]}
        driver.find_element(By.CSS_SELECTOR, 'label[for="hm0-dormant_score"]').click()
        assert shown(0) == {"dormant_score": [f"{layer} dormant score" for layer in LAYERS]}
        assert list(shown(2)) == ["neg_frac"]  # each run has its own tabs
        assert shown(1) == {}  # the second seed of a group starts folded, and opens with a click
        driver.find_element(By.CSS_SELECTOR, "#heatmaps-1 > summary").click()
        assert list(shown(1)) == ["neg_frac"]
        driver.find_element(By.CSS_SELECTOR, 'label[for="hm0-slopes"]').click()
        assert shown(0) == {"slopes": ["D/act1 learned slope"]}
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 1400
    finally:
        driver.quit()


@pytest.mark.slow
def test_real_browser_renders_the_dashboard_of_a_users_own_loop(own_loop_run):
    """The page scripts/examples/own_loop.py leaves (gan.diagnostics.api) shows its layers as a train.py run's does."""
    driver = chrome()
    try:
        driver.get((own_loop_run / "report.html").as_uri())
        width, scroll = driver.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
        assert scroll <= width, f"horizontal scroll: page {scroll} px wide in a {width} px window"
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight])")
        layers = ["G/2", "G/5", "D/1", "D/4"]
        assert {f"{layer} neg_frac" for layer in layers} <= {alt for alt, *_ in images}
        assert [i for i in images if not (i[1] and i[2] > 0 and i[3] > 0)] == []
        charts = driver.execute_script("return document.querySelectorAll('svg.chart').length")
        assert charts >= 4 * len(layers)  # dead, dormant, grad-dead, persistent per layer
        assert all(layer in driver.page_source for layer in layers)
    finally:
        driver.quit()


@pytest.mark.slow
def test_cli_screenshot_option_renders_the_page(sweep, tmp_path):
    shot = tmp_path / "shots" / "report.png"
    done = subprocess.run([sys.executable, str(SCRIPT), str(sweep), "--out", str(tmp_path / "r.html"), "--screenshot",
                           str(shot)], env={**os.environ, "GLOG_v": "3"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("RGB"))
    assert pixels.shape == (2000, 1400, 3) and pixels.std() > 10
    assert [p.name for p in shot.parent.iterdir()] == ["report.png"]  # no temporary left behind


def visible_content(driver, band_top: int, band_height: int) -> list[str]:
    """Tags and texts of the page elements drawn in the window band [band_top, band_top + band_height) (window
    coordinates), sampled on a grid with elementFromPoint: what a person sees there."""
    return driver.execute_script(
        "const [top, height] = arguments; const seen = new Set();"
        "for (let y = top + 5; y < top + height; y += 20) for (let x = 10; x < window.innerWidth; x += 40) {"
        "  const e = document.elementFromPoint(x, y);"
        "  if (e && e !== document.body && e !== document.documentElement)"
        "    seen.add(e.tagName + ':' + (e.textContent || '').trim().slice(0, 40)); }"
        "return Array.from(seen);", band_top, band_height)


@pytest.mark.slow
def test_screenshot_top_shows_the_page_further_down(sweep, tmp_path):
    """--screenshot-top=500 shows the page from 500 pixels down: the screenshot has the asked size and is drawn, and
    in the same window (checked through the DOM, not by comparing two rasterisations) the page reaches below 900
    pixels, scrolls to 500 and shows other elements there than at its top."""
    page = tmp_path / "r.html"
    page.write_text(build_dashboard(sweep))
    lower = np.asarray(Image.open(screenshot(page, tmp_path / "lower.png", height=400, top=500)).convert("RGB"))
    assert lower.shape == (400, 1400, 3) and lower.std() > 10
    driver = chrome(1400, 900)
    try:
        driver.get(page.as_uri())
        assert driver.execute_script("return document.documentElement.scrollHeight") >= 900
        top = visible_content(driver, 0, 400)
        assert driver.execute_script("window.scrollTo(0, 500); return window.scrollY") == 500
        below = visible_content(driver, 0, 400)
        assert below and top and set(below) != set(top), (top, below)
    finally:
        driver.quit()
    done = subprocess.run([sys.executable, str(SCRIPT), str(sweep), "--out", str(page), "--screenshot",
                           str(tmp_path / "x.png"), "--screenshot-top", "-1"], capture_output=True, text=True)
    assert done.returncode == 2 and "--screenshot-top=-1" in done.stderr


def test_losses_record_keeps_diverged_steps_as_null(tmp_path):
    record = losses_record(7, float("nan"), float("inf"), 0.5, 0.25)
    assert record == {"step": 7, "loss_d": None, "loss_g": None, "d_x": 0.5, "d_g_z": 0.25}
    append_jsonl(tmp_path / "losses.jsonl", record)  # strict JSON: NaN would raise here
    assert read_jsonl(tmp_path / "losses.jsonl") == [record]


def test_run_table_shows_each_networks_activation_kind(tmp_path):
    run = tmp_path / "multirun" / "0"
    fake_run(run, 0.2, 0)
    config = run / ".hydra" / "config.yaml"
    config.write_text(config.read_text().replace(
        "act:\n", "act:\n  d_kind: prelu\n  g_kind: leaky_relu\n  prelu_init: 0.1\n  elu_alpha: 1.0\n"
                   "  g_negative_slope: null\n"))
    loaded = load_run(run)
    # without overrides the settings are the config's hparams: the kinds, and the parameters of used kinds only
    assert loaded.settings["act.d_kind"] == "prelu" and loaded.settings["act.prelu_init"] == "0.1"
    assert "act.elu_alpha" not in loaded.settings
    runs = build_dashboard(tmp_path / "multirun").split('<table class="runs"')[1].split("</table>")[0]
    assert "D prelu (prelu_init=0.1), G leaky_relu (slope=0.2)" in runs


def test_run_table_shows_a_maxout_d_instead_of_its_unused_kind(tmp_path):
    run = tmp_path / "multirun" / "0"
    fake_run(run, 0.2, 0)
    config = run / ".hydra" / "config.yaml"
    text = config.read_text().replace(
        "act:\n", "act:\n  d_kind: leaky_relu\n  g_kind: leaky_relu\n  g_negative_slope: 0.0\n")
    config.write_text(text.replace("model:\n", "model:\n  d_maxout: 5\n"))
    assert load_run(run).activations == "D maxout (pieces=5), G leaky_relu (slope=0.0)"


def test_a_run_from_before_a_setting_existed_groups_with_its_default(tmp_path):
    old, new = tmp_path / "runs" / "old", tmp_path / "runs" / "new"
    fake_run(old, 0.2, 0)  # written before model.d_maxout existed: its config lacks the key
    fake_run(new, 0.2, 1)
    config = new / ".hydra" / "config.yaml"
    config.write_text(config.read_text().replace("model:\n", "model:\n  d_maxout: 0\n"))
    runs = [load_run(old), load_run(new)]
    assert runs[0].settings["model.d_maxout"] == "0"
    groups, common, varied = group_runs(runs)
    assert len(groups) == 1 and "model.d_maxout" not in varied and common["model.d_maxout"] == "0"


def test_a_run_without_a_config_gets_no_settings_from_before_they_existed(tmp_path):
    run = tmp_path / "runs" / "bare"
    fake_run(run, 0.2, 0)
    (run / ".hydra" / "config.yaml").unlink()  # nothing says what it ran: no invented model.d_norm, train.loss, ...
    assert load_run(run).settings == {}


# ------------------------------------------------------------------ untrusted run folders (stored XSS)
# Markup that changes the page title if it runs: as a script, and as an event handler of an element.
MARKUP = "<script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED'\">"
NAME_MARKUP = "<svg onload=\"document.title='PWNED'\">"  # a folder or file name cannot hold the '/' of </script>


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, attrs))


def assert_inert(page: str) -> None:
    """No element of the page runs code: no script-like element, no on* handler, no URL but inline data."""
    parser = _Tags()
    parser.feed(page)
    tags = {tag for tag, _ in parser.tags}
    assert not tags & {"script", "iframe", "object", "embed", "link", "meta http-equiv"}, tags
    handlers = [(tag, name) for tag, attrs in parser.tags for name, _ in attrs if name.startswith("on")]
    assert handlers == []
    urls = [value for _, attrs in parser.tags for name, value in attrs if name in ("src", "href")]
    assert all(value.startswith("data:image/png;base64,") for value in urls), urls
    assert MARKUP not in page and NAME_MARKUP not in page


def hostile_sweep(root: Path) -> Path:
    """Two runs whose every text field read from their files holds markup: folder and sample names, config
    values, override keys and values, metric keys, layer names, event kinds and details."""
    for job, slope in enumerate((0.0, 0.2)):
        run = root / f"{job}{NAME_MARKUP}"
        fake_run(run, slope, job, [f"act.negative_slope={slope}", f"seed={job}", f"{MARKUP}={MARKUP}{job}"],
                 events=[{"step": 100, "kind": MARKUP, "detail": {MARKUP: MARKUP}},
                         {"step": 200, "kind": "resume", "detail": {"checkpoint": MARKUP}}], slopes=True)
        config = run / ".hydra" / "config.yaml"
        config.write_text(config.read_text() + f"x:\n  y: {json.dumps(MARKUP)}\n"
                          + f"act_note: {json.dumps(MARKUP)}\n")
        for name in ("diagnostics.jsonl", "metrics.jsonl"):
            text = (run / name).read_text()
            (run / name).write_text(text.replace('"D/act1"', json.dumps("D/" + MARKUP))
                                    .replace('"frechet_distance"', json.dumps(MARKUP)))
        (run / "metrics.json").write_text(json.dumps({MARKUP: 1.0, "class_coverage": 0.5}))
        sample = run / "samples" / "step_001000.png"
        sample.rename(sample.with_name(f"step_001000{NAME_MARKUP}.png"))
    (root / "2").mkdir()  # a run without overrides: its settings come from the config, markup included
    fake_run(root / "2" / NAME_MARKUP, 0.2, 2)
    config = root / "2" / NAME_MARKUP / ".hydra" / "config.yaml"
    config.write_text(config.read_text().replace("act:\n", f"act:\n  d_kind: {json.dumps(MARKUP)}\n"
                                                 f"  g_kind: leaky_relu\n"))
    return root


def test_markup_in_any_field_of_a_run_is_shown_as_text(tmp_path):
    root = hostile_sweep(tmp_path / "sweep")
    page = build_dashboard(root, title=MARKUP)
    assert_inert(page)
    escaped = html.escape(MARKUP)
    runs = page.split('<table class="runs"')[1].split("</table>")[0]
    assert f"1 {escaped}" in runs  # the event kind's count in the run table (raw before: a stored XSS)
    for shown in (f"<title>{escaped}</title>", f"D/{escaped}", f"{escaped}={escaped}0", html.escape(NAME_MARKUP)):
        assert shown in page, shown


@pytest.mark.slow
def test_markup_in_run_folders_stays_text_in_the_dashboard_and_sweep_scripts(tmp_path):
    root = hostile_sweep(tmp_path / "sweep")
    out = tmp_path / "page.html"
    done = run_script("scripts/dashboard.py", str(root), "--out", str(out), "--title", MARKUP)
    assert done.returncode == 0, done.stderr[-2000:]
    assert_inert(out.read_text())
    done = run_script("scripts/summarize_sweep.py", str(root))  # its Hydra jobs: the folders with overrides.yaml
    assert done.returncode == 0, done.stderr[-2000:]
    assert_inert((root / "dashboard.html").read_text())


@pytest.mark.slow
def test_real_browser_runs_no_markup_from_run_folders(tmp_path):
    root = hostile_sweep(tmp_path / "sweep")
    page = write_text_atomic(tmp_path / "report.html", build_dashboard(root, title="dashboard"))
    driver = chrome()
    try:
        driver.get(page.as_uri())
        assert driver.title == "dashboard"  # a script or handler that ran would have set it to PWNED
        texts = driver.execute_script("return document.body.innerText")
        assert "1 <script>document.title='PWNED'</script>" in texts  # the event kind, shown as text
        assert driver.execute_script("return document.scripts.length") == 0
    finally:
        driver.quit()


# ------------------------------------------------------------------ damaged run folders: errors name the file
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(7))


@pytest.mark.slow
@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "metrics.json").write_text(""), r"metrics.json: empty"),
    (lambda run: (run / "metrics.json").write_text('{"a":'), r"metrics.json: not complete JSON"),
    (lambda run: (run / "metrics.json").write_text('{"class_kl": "<b>x</b>"}'),
     r"metrics.json: 'class_kl' is '<b>x</b>', not a number"),
    (lambda run: (run / "losses.jsonl").write_bytes((run / "losses.jsonl").read_bytes()
                                                    + b'{"step": 5, "x": "\xff"}\n'),
     r"losses.jsonl: not UTF-8 text"),
    (lambda run: append_jsonl(run / "losses.jsonl", {"step": 2000, "loss_d": "high"}),
     r"losses.jsonl \(step 2000\): 'loss_d' is 'high', not a number"),
    (lambda run: (run / ".hydra" / "config.yaml").write_text(LAUGHS),
     r"config.yaml: not YAML this project reads: it uses the YAML alias \*a"),
])
def test_a_damaged_run_file_is_named_in_the_error(sweep, damage, message):
    damage(sweep / "1")
    with pytest.raises(ValueError, match=message):
        build_dashboard(sweep)
    done = run_script("scripts/dashboard.py", str(sweep), "--out", str(sweep / "page.html"))
    assert done.returncode == 2 and re.search(message, done.stderr) and "Traceback" not in done.stderr


@pytest.mark.slow
def test_out_pointing_at_a_directory_is_a_usage_error(sweep, tmp_path):
    done = run_script("scripts/dashboard.py", str(sweep), "--out", str(tmp_path))
    assert done.returncode == 2 and "is a directory; give a file name in it" in done.stderr


def test_a_negative_zero_slope_is_shown_as_zero(tmp_path):
    run = tmp_path / "runs" / "0"
    fake_run(run, -0.0, 0)
    config = run / ".hydra" / "config.yaml"
    config.write_text(config.read_text().replace("act:\n", "act:\n  d_kind: leaky_relu\n  g_kind: leaky_relu\n"))
    loaded = load_run(run)
    assert "slope=-0.0" not in loaded.activations and "D leaky_relu (slope=0.0)" in loaded.activations
    assert loaded.settings["act.negative_slope"] == "0.0"


# ------------------------------------------------------------------ the overview: where channels are dying

DYING = ("dead_frac", "dormant_frac", "grad_dead_frac")


@pytest.fixture(scope="module")
def unet_run(tmp_path_factory) -> Path:
    """A run of scripts/examples/unet.py's U-Net + two-input PatchGAN (19 probed layers, one cell used twice, a
    Tanh primitive) with 3 channels of one layer silenced: 6 steps, a check every 2."""
    from scripts.examples.unet import train_pix2pix

    run_dir = tmp_path_factory.mktemp("unet") / "run"
    train_pix2pix(run_dir, steps=6, every=2, silence=3)
    return run_dir


class _Cells(HTMLParser):
    """The text of each first cell of the rows of the tables of class `dying`."""

    def __init__(self) -> None:
        super().__init__()
        self.rows, self.depth, self.cell, self.text = [], 0, 0, None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("class", "dying") in attrs:
            self.depth += 1
        elif self.depth and tag == "tr":
            self.cell = 0
        elif self.depth and tag == "td":
            self.cell += 1
            if self.cell == 1:
                self.text = ""

    def handle_endtag(self, tag):
        if tag == "table" and self.depth:
            self.depth -= 1
        elif tag == "td" and self.text is not None:
            self.rows.append(self.text.split("\u00d7")[0].strip())
            self.text = None

    def handle_data(self, data):
        if self.text is not None:
            self.text += data


def overview_rows(page: str) -> list[str]:
    parser = _Cells()
    parser.feed(page)
    return parser.rows


@pytest.mark.slow
def test_overview_lists_exactly_the_layers_whose_statistics_say_so(unet_run):
    last = read_jsonl(unet_run / "diagnostics.jsonl")[-1]
    page = build_dashboard(unet_run)
    expected = [layer for layer, v in last["layers"].items() if any(v[m] for m in DYING)]
    rows = overview_rows(page)
    assert sorted(rows) == sorted(expected) and "G/1.3" in rows
    worst = [max(last["layers"][layer][m] or 0.0 for m in DYING) for layer in rows]
    assert worst == sorted(worst, reverse=True) and worst[rows.index("G/1.3")] >= 3 / 8  # most severe first
    assert page.index('id="overview"') < page.index('<table class="runs"') < page.index('details class="layer"')
    labels = re.findall(r'<div style="height:\d+px;line-height:\d+px;font-size:\d+px">([^<]+)</div>',
                        page.split('data-stat="dead_frac"')[1].split("</figure>")[0])
    assert labels == list(last["layers"])  # forward order, G then D
    assert "G/relu</b> <span class=\"path\">model.model.1.model.5.model.5.model.5.relu" in page
    assert "called at 2 places" in page and "G/tanh (primitive Tanh)" in page


def synthetic_run(run_dir: Path, dead: dict[str, float], checks: int = 3, paths: bool = True) -> None:
    """A run of 20 layers whose listed layers have that share of dead (and so dormant, with slope 0) channels."""
    tracker = DeadChannelTracker()
    layers = [f"G/{i}" for i in range(10)] + [f"D/{i}" for i in range(10)]
    for step in range(1, checks + 1):
        stats = {}
        for layer in layers:
            neg, out = np.full(20, 0.5), np.ones(20)
            n = round(20 * dead.get(layer, 0.0))
            neg[:n], out[:n] = 1.0, 0.0
            stats[layer] = LayerStats(neg, out, np.ones(20), 1, 1, None, None, f"model.{layer[2:]}" if paths else "")
        append_jsonl(run_dir / "diagnostics.jsonl", tracker.update(step * 10, stats))
        append_jsonl(run_dir / "losses.jsonl", losses_record(step * 10, 1.0, 1.0, 0.5, 0.5))


def test_a_run_with_nothing_dead_says_so_in_one_line(tmp_path):
    synthetic_run(tmp_path / "run", {}, paths=False)  # records of a run from before "path" existed
    page = build_dashboard(tmp_path / "run")
    overview = page.split('<section id="overview">')[1].split("</section>")[0]
    assert overview.startswith('<p class="verdict ok">No dead, dormant or gradient-dead channels at any check '
                               '(20 layers, 3 checks).</p>')
    assert 'class="overview-map"' not in page and overview_rows(page) == []


def test_a_single_check_shows_its_values(tmp_path):
    synthetic_run(tmp_path / "run", {"D/3": 0.25, "G/7": 0.5}, checks=1)
    page = build_dashboard(tmp_path / "run")
    assert overview_rows(page) == ["G/7", "D/3"] and "step 10 (one check)" in page
    layer = page.split('<details class="layer" id="layer-7">')[1].split("</details>")[0]
    assert 'class="value">0.5</text>' in layer and "<circle" in layer  # a dot and its value, not an empty line


@pytest.mark.slow
def test_real_browser_shows_the_unet_runs_overview_in_the_first_screen(unet_run):
    page = unet_run / "report.html"
    driver = chrome(1400, 900)
    try:
        driver.get(page.as_uri())
        height = driver.execute_script("return window.innerHeight")
        boxes = driver.execute_script(
            "return ['#overview', '#overview table.dying', '#overview .maps'].map(s => {"
            "const r = document.querySelector(s).getBoundingClientRect(); return [r.top, r.bottom, r.width]})")
        assert all(0 <= top < bottom <= height and width > 0 for top, bottom, width in boxes), (boxes, height)
        maps = driver.execute_script("return Array.from(document.querySelectorAll('img.overview-map')).map("
                                     "i => [i.complete, i.naturalWidth, i.getBoundingClientRect().bottom])")
        assert len(maps) == 3 and all(done and natural > 0 and bottom <= height for done, natural, bottom in maps)
        charts = driver.execute_script("return Array.from(document.querySelectorAll('details.layer svg.chart'))"
                                       ".filter(s => s.checkVisibility()).length")
        assert charts == 0  # the per-layer charts open on demand
        driver.execute_script("document.querySelector('#layer-1 > summary').click()")
        charts = driver.execute_script("return Array.from(document.querySelectorAll('#layer-1 svg.chart'))"
                                       ".map(s => s.getBoundingClientRect().height)")
        assert len(charts) == 4 and min(charts) > 60
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 1400
    finally:
        driver.quit()
