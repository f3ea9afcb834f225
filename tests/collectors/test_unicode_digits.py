"""Numbers written in other digits (issue 15's bad input): `str.isdigit()` says yes to "²" and "¹", which
`int()` refuses, so a parser that tested with it and then called int() raised on a fixture tree or a
hostile file: /proc/softirqs with a `CPU²` column took the whole tick with it (and, parsed only when first
read since issue 25, would have taken the screen that read it). The parsers now test with `isdecimal()`,
exactly what `int()` takes: "²" is garbage, said as such; a decimal digit of another script ("١٢") is a
number, as int() reads it.
"""
import json

import pytest

from pinscope.collectors.collect import NodeCollector, Options
from pinscope.collectors.frames import parse_frame
from pinscope.collectors.parse.cgroup import parse_numa_stat, parse_procs
from pinscope.collectors.parse.noise import parse_ipis, parse_sched_wait, parse_schedstat, parse_softirqs
from pinscope.collectors.parse.procfs import (parse_interrupts, parse_numastat, parse_proc_stat, parse_task_sched,
                                              parse_task_status)
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from pinscope.collectors.transport.local import LocalTransport

SUP = "\u00b2"  # SUPERSCRIPT TWO: isdigit() True, int() refuses it


@pytest.mark.parametrize("parse, text", [
    (parse_softirqs, f"      CPU0 CPU{SUP}\n HI: 1 2\n NET_RX: 3 {SUP}\n"),
    (parse_ipis, f"      CPU0 CPU{SUP}\nLOC: 1 2 Local timer interrupts\nRES: {SUP} 4 Rescheduling interrupts\n"),
    (parse_interrupts, f"      CPU0 CPU{SUP}\n 4{SUP}: 1 2 IR-PCI-MSI eth0\n 42: {SUP} 2 IR-PCI-MSI eth1\n"),
    (parse_numastat, f"numa_hit {SUP}\nnuma_miss 12\n"),
    (parse_task_status, f"Tgid:\t{SUP}\nvoluntary_ctxt_switches:\t{SUP}\n"),
    (parse_task_sched, f"nr_switches : {SUP}\nse.nr_migrations : 4\n"),
    (parse_schedstat, f"1{SUP} 2 3\n"),
    (parse_sched_wait, "se.sum_exec_runtime : --5.0\nse.statistics.wait_sum : 1.0\nnr_switches : 3\n"),
    (parse_sched_wait, f"se.sum_exec_runtime : 5.{SUP}\nse.statistics.wait_sum : 1.0\nnr_switches : 3\n"),
    (parse_procs, f"1\n{SUP}\n3\n"),
    (lambda t: parse_numa_stat(t, 2), f"anon N0={SUP} N1=4096\n"),
    (parse_proc_stat, f"cpu  1 2 3 4 5 6 7 8 9 10\ncpu{SUP} 1 2 3 4 5 6 7 8 9 10\ncpu1 1 2 3 {SUP} 5 6 7 8 9 10\n"),
])
def test_a_superscript_digit_is_garbage_not_a_crash(parse, text):
    parse(text)  # no exception: what it gives for the garbage is each parser's usual "not a number"


def test_the_parsers_read_a_decimal_digit_of_another_script_as_int_does():
    assert parse_softirqs("   CPU0 CPU١\n HI: ٣ 4\n") == {"HI": {0: 3, 1: 4}}
    assert parse_procs("١٢\n7\n") == frozenset({12, 7})


def test_a_frame_whose_seq_or_cut_is_a_superscript_is_read():
    f = parse_frame(f"B{SUP} g\nF/proc/uptime\nL1.0 2.0\nT{SUP} /proc/uptime\nZ\n".encode())
    assert f.seq == 0 and f.files["/proc/uptime"] == "1.0 2.0\n" and f.complete


async def test_a_node_whose_counters_hold_superscripts_gives_its_reports_and_rates(tmp_path):
    """Through the real probe, two ticks with the counters moving: /proc/softirqs with a `CPU²` column and a
    `²` count, /proc/interrupts and a container's cgroup.procs likewise. Every report comes, its rates (the
    softirqs' too, worked out when read) and its JSON."""
    spec = NodeSpec(hostname="digits", cores=2, threads=2, cgroup=2, reserved="0,2", pods=[
        PodSpec("lat", containers=[CtrSpec("engine", cpus="1,3", tasks=2, busy=0.9)])], irqs={40: "1"})
    sim = SimNode(spec, tmp_path).write()

    def spoil():
        p = tmp_path / "proc/softirqs"
        lines = p.read_text().splitlines()
        lines[0] = lines[0].replace("CPU1", f"CPU{SUP}", 1)
        lines[2] = lines[2].replace(" 0", f" {SUP}", 1) if " 0" in lines[2] else lines[2] + f" {SUP}"
        p.write_text("\n".join(lines) + "\n")
        q = tmp_path / "proc/interrupts"
        q.write_text(q.read_text().replace("CPU1", f"CPU{SUP}", 1))
        for procs in tmp_path.glob("sys/fs/cgroup/**/cgroup.procs"):
            if "pod" in str(procs.parent):
                procs.write_text(procs.read_text() + f"{SUP}\n")
                break

    col = NodeCollector("local", Options(root=str(tmp_path)), LocalTransport(str(tmp_path)))
    await col.connect()
    out = []
    try:
        for req in ("gcTai", "gcTai", "g"):
            spoil()
            out.append(await col.tick(req))
            sim.tick(1.0)
    finally:
        await col.close()
    reports = out

    assert all(r.rates is not None for r in reports[1:])
    for r in reports[1:]:
        dict(r.rates.softirqs), dict(r.rates.ipis)  # worked out here: no exception
        json.dumps(r.to_json())
    assert "engine" in {c.name for _, c in reports[-1].snapshot.containers()}
