"""The recorder's window (robot_identification.nodes._recording.StampWindow, no ROS): only the
messages stamped within the excitation run are kept, whatever their arrival time - a backlog
from before the run, states after its end (also those that arrived before the end was known,
held back meanwhile) and unstamped messages outside the run are left out."""
from robot_identification.nodes._recording import StampWindow


def test_window_keeps_the_run_by_stamp_not_by_arrival():
    w = StampWindow(tolerance=0.0005, holdback=0.05)   # the end status may come 50 ms late
    written = []
    for k in range(50):                         # before the run: waits
        written += w.offer(k * 0.001, True, ("s", k))
    written += w.offer(None, False, ("c", "before"))
    assert written == []
    written += w.open(0.020)                    # the run's first reference at 0.020 s
    for k in range(50, 100):
        written += w.offer(k * 0.001, True, ("s", k))
        written += w.offer(None, False, ("c", k))
    written += w.close(0.060)                   # its end, known late (states up to 0.099 in)
    for k in range(100, 120):
        written += w.offer(k * 0.001, True, ("s", k))
        written += w.offer(None, False, ("c", k))
    written += w.finish()
    states = [i for kind, i in written if kind == "s"]
    assert states == list(range(20, 61))        # 0.020 ... 0.060 s: within one sample
    commands = [i for kind, i in written if kind == "c"]
    # unstamped: those that arrived after a kept state and before the first state past the end
    assert commands == ["before"] + list(range(50, 61))
    assert w.dropped_before == 20 and w.dropped_after == 59


def test_window_without_a_run_keeps_from_the_given_start():
    w = StampWindow(tolerance=0.0005, holdback=0.01)
    for k in range(10):
        assert w.offer(k * 0.001, True, k) == []
    assert w.finish(lower=0.005) == [5, 6, 7, 8, 9]
