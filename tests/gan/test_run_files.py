"""Run-directory jsonl files: a resume truncates them to complete records up to the resumed step; events."""
import json
import logging

import pytest

from gan.run.files import (
    EVENTS_FILE,
    METRICS_FILE,
    STEP_LOGS,
    append_event,
    append_jsonl,
    read_events,
    read_jsonl,
    record_resume,
    truncate_for_resume,
    truncate_jsonl,
)


def strict_steps(path) -> list[int]:
    """Steps of every line, each of which must be a complete JSON record."""
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


def test_truncate_drops_a_partial_last_line_and_later_steps(tmp_path):
    path = tmp_path / "losses.jsonl"
    for step in range(1, 6):
        append_jsonl(path, {"step": step, "v": step})
    whole = path.read_text()
    path.write_text(whole[: len(whole) - 8])  # a crash in the middle of appending step 5
    assert truncate_jsonl(path, 3) == 2
    assert strict_steps(path) == [1, 2, 3]
    append_jsonl(path, {"step": 4, "v": 40})  # what the resumed run appends next is a line of its own
    assert strict_steps(path) == [1, 2, 3, 4]


def test_truncate_repairs_a_line_glued_to_a_partial_one_with_a_warning(tmp_path, caplog):
    path = tmp_path / "diagnostics.jsonl"
    path.write_text('{"step":1}\n{"step":2,"lay{"step":3}\n{"step":4}\n')  # what an older version left behind
    with pytest.raises(ValueError, match="diagnostics.jsonl:2"):
        read_jsonl(path)
    with caplog.at_level(logging.WARNING, logger="gan.run.files"):
        assert truncate_jsonl(path, 10) == 1
    assert strict_steps(path) == [1, 4]
    assert "diagnostics.jsonl" in caplog.text and "[2]" in caplog.text


def test_truncate_leaves_an_intact_file_untouched(tmp_path):
    path = tmp_path / "losses.jsonl"
    for step in (1, 2):
        append_jsonl(path, {"step": step})
    inode = path.stat().st_ino
    assert truncate_jsonl(path, 2) == 0 and path.stat().st_ino == inode  # not rewritten
    assert truncate_jsonl(tmp_path / "missing.jsonl", 2) == 0


def test_resume_truncates_every_step_log_and_the_latest_metrics(tmp_path):
    for name in STEP_LOGS:
        for step in (2, 4, 6):
            append_jsonl(tmp_path / name, {"step": step, "x": step} if name != EVENTS_FILE else
                         {"step": step, "kind": "nonfinite_skip", "detail": {}})
    (tmp_path / METRICS_FILE).write_text(json.dumps({"x": 6}))
    assert truncate_for_resume(tmp_path, 4) == {name: 1 for name in STEP_LOGS}
    for name in STEP_LOGS:
        assert strict_steps(tmp_path / name) == [2, 4]
    assert json.loads((tmp_path / METRICS_FILE).read_text()) == {"x": 4}  # the last evaluation kept
    truncate_for_resume(tmp_path, 0)
    assert not (tmp_path / METRICS_FILE).exists()  # no evaluation left: no latest values either


def test_events_keep_their_order_and_format(tmp_path):
    record_resume(tmp_path, 60, "run/checkpoints/step_00000060.ckpt", {"act.negative_slope": [0.2, 0.05]})
    append_event(tmp_path, 61, "nonfinite_skip", {"networks": ["D"]})
    assert read_events(tmp_path) == [
        {"step": 60, "kind": "resume", "detail": {"checkpoint": "run/checkpoints/step_00000060.ckpt"}},
        {"step": 60, "kind": "resume_override", "detail": {"changed": {"act.negative_slope": [0.2, 0.05]}}},
        {"step": 61, "kind": "nonfinite_skip", "detail": {"networks": ["D"]}}]
    with pytest.raises(ValueError, match="event kind 'restart' is not one of"):
        append_event(tmp_path, 1, "restart", {})
    record_resume(tmp_path, 60, "again.ckpt", {})  # a second resume at the same step drops the later event
    assert [(e["step"], e["kind"]) for e in read_events(tmp_path)] == [(60, "resume"), (60, "resume_override"),
                                                                       (60, "resume")]


def tensorboard_events(folder) -> list:
    """Every Event in the TFRecord event files of a folder (length, crc, data, crc per record)."""
    import struct

    from tensorboardX.proto.event_pb2 import Event

    events = []
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        at = 0
        while at < len(data):
            (length,) = struct.unpack("<Q", data[at:at + 8])
            events.append(Event.FromString(data[at + 12:at + 12 + length]))
            at += 12 + length + 4
    return events


def test_a_resumed_run_purges_the_tensorboard_steps_it_redoes(tmp_path):
    from tensorboardX.proto.event_pb2 import SessionLog

    from gan.run.tensorboard import TensorBoardWriter

    for start in (0, 4):
        tensorboard = TensorBoardWriter(tmp_path / str(start), 10, start)
        tensorboard.scalars(start + 1, {"loss/d": 1.0})
        tensorboard.close()
    starts = {start: [e.step for e in tensorboard_events(tmp_path / str(start) / "tensorboard")
                      if e.HasField("session_log") and e.session_log.status == SessionLog.START]
              for start in (0, 4)}
    assert starts == {0: [], 4: [5]}  # TensorBoard hides events at step >= 5 written before this START
