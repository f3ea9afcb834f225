"""Bad and hostile node files through the real probe (issue 15): long lines, huge files, FIFOs and
directories where files should be, names holding any byte. Each under dash + mawk, busybox sh + awk, bash:
the answer is the same, and what the probe reads is bounded (counted in bytes, not timed)."""
import asyncio
import json
import os

import pytest

from pinscope.collectors.collect import NodeCollector, Options, snapshot
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from pinscope.collectors.transport.local import LocalTransport
from pinscope.collectors.text import CONTROL, display
from helpers import need
from nodes import HOSTILE, hostile
from probe_procs import StopAwk, fifo_and_endless_line, gone, probe_procs, rchar
from test_probe_shells import toolbox

SHELLS = ("dash", "busybox", "bash")
STATE = "var/lib/kubelet/cpu_manager_state"


def read(root, path_dir=None) -> dict:
    old = os.environ["PATH"]
    if path_dir:
        os.environ["PATH"] = f"{path_dir}:{old}"
    try:
        report = asyncio.run(asyncio.wait_for(snapshot("local", Options(root=str(root), frame_timeout=10)), 20))
    finally:
        os.environ["PATH"] = old
    return report.to_json()


def big_node() -> NodeSpec:
    """256 CPUs (2 x 64 cores x 2 threads), 64 pods pinned to 2 CPUs each: a ~5 KB one-line checkpoint."""
    pods = [PodSpec(f"pinned-{i:02d}", "hft", containers=[
                CtrSpec("matching-engine-primary", cpus=f"{1 + i},{129 + i}", tasks=1)]) for i in range(64)]
    return NodeSpec(hostname="big-256", sockets=2, cores=64, threads=2, numbering="intel", cgroup=2, driver="systemd",
                    policy="static", reserved="0,128", pods=pods)


def errors(o) -> list[str]:
    return [f"{e['source']}: {e['message']}" for e in o["errors"]]


@pytest.mark.parametrize("shell", SHELLS)
def test_256_cpus_with_a_5kb_one_line_checkpoint_reads_right(tmp_path, shell):
    root = tmp_path / "node"
    SimNode(big_node(), root).write()
    state = (root / STATE).read_bytes()
    assert len(state) > 5000 and b"\n" not in state
    o = read(root, toolbox(tmp_path, shell))
    assert errors(o) == []
    assert [f["code"] for f in o["findings"] if f["severity"] == "critical"] == []
    roles = [c["role"] for c in o["cpus"]]
    assert len(roles) == 256 and roles.count("exclusive") == 128 and roles.count("reserved") == 2
    assert roles.count("shared") == 126 and "unassigned" not in roles


def _bytes_read() -> int:
    """Bytes read (read(2) and the like, pipes included) by this process and every child it has waited for:
    Linux adds a reaped child's counts, and those of the children it reaped, to its parent's
    (/proc/PID/io, kernel/exit.c wait_task_zombie)."""
    try:
        with open("/proc/self/io") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("rchar:"))
    except (OSError, StopIteration):
        need(False, "no /proc/self/io (a kernel without CONFIG_TASK_IO_ACCOUNTING)")
        raise


# a 50 MB one-line checkpoint read whole costs >= 50 MB here; cut at 1 MiB it costs ~11 MB more than a normal
# one (the cut MiB goes through od as hex, ~3 bytes a byte, then awk, then this client)
WHOLE = 50_000_000


@pytest.mark.parametrize("shell", SHELLS)
def test_a_50mb_checkpoint_is_cut_at_1mib_and_not_read_further(tmp_path, shell):
    """The probe reads at most its budget of a huge file: counted in bytes read, against the same node with a
    normal checkpoint (it was a time, under a second more: a loaded machine failed it, and a fast awk reading
    50 MB whole passed it)."""
    bindir = toolbox(tmp_path, shell)
    roots = {}
    for kind in ("normal", "50mb"):
        roots[kind] = tmp_path / kind
        SimNode(hostile_node()[0], roots[kind]).write()
    doc = json.loads((roots["50mb"] / STATE).read_text())
    doc["entries"]["x" * WHOLE] = {}  # one line, 50 MB
    (roots["50mb"] / STATE).write_text(json.dumps(doc))
    cost = {}
    for kind in ("normal", "50mb"):
        before = _bytes_read()
        o = read(roots[kind], bindir)
        cost[kind] = _bytes_read() - before
    print(f"{shell}: bytes read with a normal checkpoint {cost['normal']}, with a 50 MB one {cost['50mb']}")
    assert cost["normal"] > 0  # the counter sees the probe's reads
    assert cost["50mb"] - cost["normal"] < WHOLE // 2, cost
    assert "/var/lib/kubelet/cpu_manager_state: larger than 1048576 bytes: cut at 1048576 bytes (the rest was not read)" in errors(o)
    # not read whole is not corrupt: said so, never STATE_UNREADABLE (critical, "delete the file")
    assert [f["code"] for f in o["findings"] if f["code"].startswith("STATE_")] == ["STATE_NOT_READ_WHOLE"]
    assert len(o["cpus"]) == 4 and o["pods"]  # the rest of the node is still read


def _no_probe_left(root) -> None:
    mark = f"PSROOT={root}".encode()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                env = open(f"/proc/{d}/environ", "rb").read()
            except OSError:
                continue
            assert mark + b"\0" not in env, f"pid {d} of the probe still runs"


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("kind", ["fifo", "dir", "socket"])
def test_a_fifo_directory_or_socket_at_the_checkpoint_is_refused_without_hanging(tmp_path, shell, kind):
    import socket

    root = tmp_path / "node"
    SimNode(hostile_node()[0], root).write()
    st = root / STATE
    st.unlink()
    if kind == "fifo":
        os.mkfifo(st)
    elif kind == "dir":
        st.mkdir()
    else:
        s = socket.socket(socket.AF_UNIX)
        here = os.getcwd()
        os.chdir(st.parent)  # a relative name: tmp_path can be longer than a socket path may be (108 bytes)
        try:
            s.bind(st.name)
        finally:
            os.chdir(here)
    bindir = toolbox(tmp_path, shell)
    o = read(root, bindir)  # opening a FIFO would block: read() has a deadline, its error would differ
    assert f"/var/lib/kubelet/cpu_manager_state: is a {kind}, not a regular file: not opened" in errors(o)
    (f,) = [f for f in o["findings"] if f["code"] == "STATE_UNREADABLE"]
    assert "cpu_manager_state is unreadable" in f["message"]
    assert len(o["cpus"]) == 4 and o["pods"]  # only that file is lost
    _no_probe_left(root)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_fifo_as_kubelet_config_and_drop_in(tmp_path, shell):
    spec = hostile_node()[0]
    spec.flags = ["--config-dir=/etc/kubernetes/kubelet.conf.d"]
    root = tmp_path / "node"
    SimNode(spec, root).write()
    cfg = root / "var/lib/kubelet/config.yaml"
    cfg.unlink()
    os.mkfifo(cfg)
    (root / "etc/kubernetes/kubelet.conf.d").mkdir(parents=True)
    os.mkfifo(root / "etc/kubernetes/kubelet.conf.d/10-a.conf")
    o = read(root, toolbox(tmp_path, shell))
    errs = errors(o)
    assert "/var/lib/kubelet/config.yaml: is a fifo, not a regular file: not opened" in errs
    assert "/etc/kubernetes/kubelet.conf.d/10-a.conf: is a fifo, not a regular file: not opened" in errs
    assert len(o["cpus"]) == 4
    _no_probe_left(root)


def test_a_cgroup_file_over_64kib_is_cut_and_said(tmp_path):
    root = tmp_path / "node"
    sim = SimNode(hostile_node()[0], root).write()
    p = sim.spec.pods[0]
    d = root / sim.cg_dir(p, p.containers[0]).lstrip("/")
    (d / "cgroup.procs").write_text("".join(f"{100000 + i}\n" for i in range(12000)))  # 84 KB
    o = read(root)
    src = sim.cg_dir(p, p.containers[0]) + "/cgroup.procs"
    assert f"{src}: larger than 65536 bytes: cut at 65536 bytes (the rest was not read)" in errors(o)


def hostile_node() -> tuple[NodeSpec, dict]:
    return hostile(), HOSTILE


@pytest.mark.parametrize("shell", SHELLS)
def test_names_with_any_byte_arrive_exactly(tmp_path, shell):
    spec, names = hostile_node()
    root = tmp_path / "node"
    SimNode(spec, root).write()
    o = read(root, toolbox(tmp_path, shell))
    (p,) = o["pods"]
    assert (p["namespace"], p["name"]) == (names["ns"], names["pod"])
    assert [c["name"] for c in p["containers"]] == [names["ctr"]]
    assert [f["code"] for f in o["findings"] if f["severity"] == "critical"] == ["INTRUDER_TASK"]
    (f,) = [f for f in o["findings"] if f["code"] == "INTRUDER_TASK"]
    assert f["message"].startswith(names["comm"] + " (pid ") and f["pod"] == names["pod"]
    assert f["container"] == names["ctr"]


async def test_a_cgroup_leaf_with_a_newline_and_backslash_reaches_the_client(tmp_path):
    """A directory name the probe's line protocol could not carry raw: its files are read all the same."""
    spec, _ = hostile_node()
    root = tmp_path / "node"
    sim = SimNode(spec, root).write()
    p = spec.pods[0]
    pod_dir = root / sim.cg_dir(p, None).lstrip("/")
    odd = pod_dir / "x\ny\\n.scope"
    odd.mkdir()
    (odd / "cpuset.cpus.effective").write_text("1\n")
    (odd / "cpu.stat").write_text("usage_usec 1\n")

    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    await col.connect()
    try:
        first, _ = await col.read("g")  # the first frame (static too): every file whole
        fr = await col.transport.request("g")
    finally:
        await col.close()

    leaf = sim.cg_dir(p, None) + "/x\ny\\n.scope"
    assert first.files[leaf + "/cpuset.cpus.effective"] == "1\n"
    # sent whole once, then said unchanged under the very same (unescaped) name
    assert leaf + "/cpuset.cpus.effective" in fr.unchanged and fr.files[leaf + "/cpu.stat"] == "usage_usec 1\n"
    assert first.garbage_lines == 0 and fr.garbage_lines == 0


def test_check_and_snapshot_text_show_names_escaped(tmp_path):
    from helpers import run_cli

    root = tmp_path / "node"
    SimNode(hostile(), root).write()
    for cmd in ("check", "snapshot"):
        r = run_cli(cmd, "--root", str(root), "local")
        assert r.returncode in (0, 1, 2), r.stderr
        assert not CONTROL.search(r.stdout.replace("\n", "")) and not CONTROL.search(r.stderr.replace("\n", ""))
        assert display(HOSTILE["pod"]) in r.stdout and display(HOSTILE["ns"]) in r.stdout
        if cmd == "check":
            assert r.returncode == 2
            assert "critical INTRUDER_TASK" in r.stdout and display(HOSTILE["comm"]) + " (pid" in r.stdout
    j = json.loads(run_cli("check", "--json", "--root", str(root), "local").stdout)
    assert j["pods"][0]["name"] == HOSTILE["pod"]  # JSON keeps the exact name


def test_no_cpu_topology_is_unknown_not_a_fault_and_empty_proc_stat_is_said(tmp_path):
    import shutil

    from nodes import dual_socket_intel

    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    shutil.rmtree(root / "sys/devices/system/cpu")
    (root / "proc/stat").write_text("")
    o = read(root)
    assert [f["code"] for f in o["findings"] if f["severity"] != "info"] == []
    assert errors(o) == [
        "/sys/devices/system/cpu/online: missing, and no /sys/devices/system/cpu/cpuN: the CPU topology is unknown "
        "(no finding about CPUs is made from it)",
        "/proc/stat: has no cpuN lines (empty or not /proc/stat): CPU load unknown"]
    (root / "proc/stat").unlink()
    assert "/proc/stat: missing: CPU load unknown" in errors(read(root))


def test_a_default_cpuset_beyond_the_node_names_only_cpus_it_has(tmp_path):
    from pinscope.collectors.parse.kubelet import checksum_v2
    from nodes import dual_socket_intel

    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    st = json.loads((root / STATE).read_text())
    st["defaultCpuSet"] = "0-4095"
    st["checksum"] = checksum_v2("static", "0-4095", st["entries"])
    (root / STATE).write_text(json.dumps(st))
    o = read(root)
    (f,) = [f for f in o["findings"] if f["code"] == "OFFLINE_ASSIGNED"]
    assert f["message"] == "CPUs 48-4095 this node does not have (it has 0-47) are in the shared pool"
    assert f["cpus"] == []


def test_a_process_that_names_itself_kubelet_is_not_believed(tmp_path):
    """Anyone can call a process 'kubelet' and point it at files of their own: the one running as root wins,
    and the impostor is named."""
    from nodes import dual_socket_intel

    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    fake = root / "proc/5"  # globbed before the real kubelet (700)
    fake.mkdir()
    (fake / "comm").write_text("kubelet\n")
    (fake / "status").write_text("Name:\tkubelet\nUid:\t1000\t1000\t1000\t1000\n")
    (fake / "cmdline").write_bytes(b"kubelet\0--root-dir=/tmp/evil\0")
    o = read(root)
    assert o["kubelet"]["pid"] == 700 and o["kubelet"]["root_dir"] == "/var/lib/kubelet"
    assert "probe: process 5 is named kubelet but runs as uid 1000: not taken for kubelet" in errors(o)
    assert any(c["role"] == "exclusive" for c in o["cpus"])


def test_a_kubelet_that_has_exited_is_not_taken_for_the_running_one(tmp_path):
    """A restarted kubelet: the old one, exited and not yet reaped (a zombie: its comm stays, its cmdline is
    empty), sits before the new one in /proc. Taken for kubelet, its empty argv left the config unknown (seen on
    the real node right after a release switch: `fit` said kubelet's configuration could not be read)."""
    from nodes import dual_socket_intel

    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    old = root / "proc/5"  # globbed before the running kubelet (700)
    old.mkdir()
    (old / "comm").write_text("kubelet\n")
    (old / "status").write_text("Name:\tkubelet\nUmask:\t0022\nState:\tZ (zombie)\nUid:\t0\t0\t0\t0\n")
    (old / "cmdline").write_bytes(b"")
    o = read(root)
    assert o["kubelet"]["pid"] == 700, o["kubelet"]
    assert o["kubelet"]["cpu_manager_policy"] == "static", o["kubelet"]


def test_a_pod_whose_log_directory_cannot_be_matched_is_not_drift(tmp_path):
    root = tmp_path / "node"
    SimNode(NodeSpec(hostname="n", cores=4, threads=1, reserved="0", pods=[
        PodSpec("lost", "default", logs=False, containers=[CtrSpec("x", cpus="2")]),
        PodSpec("web", "default", qos="Burstable", containers=[CtrSpec("w")])]), root).write()
    o = read(root)
    assert [f["code"] for f in o["findings"] if f["severity"] != "info"] == []


@pytest.mark.parametrize("shell", SHELLS)
async def test_a_fifo_and_a_1gb_line_in_cgroup_files_are_refused_unread_and_nothing_is_left(tmp_path, shell):
    """Issue 22 item 4: a FIFO where a container's cpuset.cpus.effective should be hung snapshot forever; a
    1 GB cpu.stat without a newline made awk read it whole. Both are said and never opened: the probe
    reads far less than the one file's size (rchar of its processes), and it ends whole on close."""
    root = tmp_path / "node"
    fifo, big, link, _ = fifo_and_endless_line(root)
    bindir = toolbox(tmp_path, shell)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{bindir}:{old}"

    try:
        async with asyncio.timeout(60):
            col = NodeCollector("local", Options(root=str(root), frame_timeout=20), LocalTransport(str(root)))
            await col.connect()
            try:
                reports = [await col.tick("gcTai"), await col.tick("g")]
                read = sum(rchar(p) for p in probe_procs(root))
            finally:
                await col.close()
    finally:
        os.environ["PATH"] = old
    assert read < 8 << 20, f"the probe read {read} bytes"
    for rep in reports:
        probs = {(p.source, p.message) for p in rep.snapshot.problems}
        assert (fifo, "is a fifo, not a regular file: not opened") in probs
        assert (big, "larger than 1048576 bytes: not read") in probs
        assert (link, "is a symlink, not a regular file: not opened") in probs
        assert len(rep.snapshot.pods) > 2  # the rest of the node is read
    assert probe_procs(root) == []


def test_snapshot_and_check_have_a_deadline_that_names_the_target_and_end_the_whole_probe(tmp_path):
    """Issue 22 item 4: a probe stuck in a read kept snapshot waiting forever, and closing killed its sh
    only. --timeout ends the run with one line naming the target, the exit code of an unread node (1,
    check 3), and no process of the probe is left (awk included, stopped in its read)."""
    from helpers import run_cli

    root = tmp_path / "node"
    SimNode(hostile_node()[0], root).write()
    for cmd, code in (("snapshot", 1), ("check", 3)):
        with StopAwk(root) as stop:
            r = run_cli(cmd, "--timeout", "3", "--samples", "2", "--interval", "1", "--root", str(root), "local")
        assert stop.stopped, "awk was never seen"
        assert r.returncode == code, (r.returncode, r.stderr)
        (line,) = r.stderr.splitlines()
        assert line.startswith("pinscope: local: no answer within 3 s"), line
        assert "Traceback" not in r.stderr
        assert gone(root) == []


def test_a_number_too_long_for_int_leaves_its_file_out_not_the_node(tmp_path):
    """int() refuses a number of 4300 digits: one in /proc/stat or a container's cpu.stat took the node's
    whole report down ("internal error: ValueError", no JSON). Now that file is left out and said, and the
    rest of the node is read; a run of another script's digits (int() reads those too) likewise."""
    spec = NodeSpec(hostname="long-numbers", cores=4, threads=2, reserved="0,4",
                    pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="2,6")]),
                          PodSpec("web", qos="Burstable", containers=[CtrSpec("app")])])
    root = tmp_path / "node"
    SimNode(spec, root).write()
    stat = root / "proc/stat"
    lines = stat.read_text().split("\n")
    lines = [ln.replace("cpu3 ", "cpu3 " + "9" * 5000, 1) if ln.startswith("cpu3 ") else ln for ln in lines]
    stat.write_text("\n".join(lines))
    (cpu_stat,) = [p for p in root.rglob("cpu.stat") if "burstable" in str(p) and "cri-containerd" in str(p)]
    cpu_stat.write_text("usage_usec " + "\u0663" * 5000 + "\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")
    o = read(root)
    said = {e["source"]: e["message"] for e in o["errors"]}
    assert "number of 640 digits or more" in said.get("/proc/stat", ""), said
    assert "number of 640 digits or more" in said.get(str(cpu_stat)[len(str(root)):], ""), said
    # the rest of the node is there: its CPUs and roles, both pods, the pinned container's CPUs
    roles = [c["role"] for c in o["cpus"]]
    assert len(roles) == 8 and roles.count("exclusive") == 2 and roles.count("reserved") == 2, roles
    assert sorted(p["name"] for p in o["pods"]) == ["rt", "web"]
    assert [c["util"] for c in o["cpus"]] == [None] * 8  # /proc/stat was not read: load unknown, not 0


@pytest.mark.parametrize("number", ["9" * 5000, "1_" * 4400 + "1"], ids=["digits", "underscores"])
def test_a_number_too_long_for_int_in_kubelets_config_is_said_and_the_policy_unknown(tmp_path, number):
    """Kubelet's config comes as od's hex, so the frame's check cannot see its digits: its YAML parse raised
    (review). PyYAML drops "_" before int(), so a number written 1_1_1... raises without 640 digits in a row."""
    root = tmp_path / "node"
    SimNode(NodeSpec(hostname="long-config", cores=4, threads=2, reserved="0,4",
                     pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="2,6")])]), root).write()
    cfg = root / "var/lib/kubelet/config.yaml"
    cfg.write_text(cfg.read_text() + f"foo: {number}\n")
    o = read(root)
    said = [e["message"] for e in o["errors"] if e["source"] == "/var/lib/kubelet/config.yaml"]
    assert any("YAML cannot read" in m and "policy unknown" in m for m in said), said
    assert not any("is not set" in m for m in said), said  # not read: nothing is claimed of what it sets
    assert o["kubelet"]["cpu_manager_policy"] is None
    assert [f["code"] for f in o["findings"] if f["severity"] == "critical"] == []
    assert len(o["cpus"]) == 8 and [p["name"] for p in o["pods"]] == ["rt"]


def test_a_long_run_elsewhere_never_leaves_kubelets_config_out(tmp_path):
    """A quoted 700-digit string in the config is no number; a long run in /proc/stat in the same frame used
    to leave the config out with it, and a missing config read as policy none: a critical STATE_POLICY_MISMATCH
    and "reservedSystemCPUs is not set" (review)."""
    root = tmp_path / "node"
    SimNode(NodeSpec(hostname="quoted", cores=4, threads=2, reserved="0,4",
                     pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="2,6")])]), root).write()
    cfg = root / "var/lib/kubelet/config.yaml"
    cfg.write_text(cfg.read_text() + f'foo: "{"1" * 700}"\n')
    stat = root / "proc/stat"
    stat.write_text(stat.read_text().replace("cpu3 ", "cpu3 " + "7" * 700, 1))
    o = read(root)
    said = {e["source"]: e["message"] for e in o["errors"]}
    assert list(said) == ["/proc/stat"], said
    assert o["kubelet"]["cpu_manager_policy"] == "static"
    assert [f["code"] for f in o["findings"] if f["severity"] == "critical"] == []


async def test_a_file_left_out_for_a_long_number_stays_out_when_said_unchanged(tmp_path):
    """The probe says "unchanged" of a cgroup file it sent whole; the client had left that one out, held no
    copy, called it lost and asked for a static frame every other tick (review). Now it stays out, said."""
    root = tmp_path / "node"
    SimNode(NodeSpec(hostname="held", cores=4, threads=2, reserved="0,4",
                     pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="2,6")])]), root).write()
    (eff,) = [p for p in root.rglob("cpuset.cpus.effective") if p.read_text().strip() == "2,6"]  # the pinned app
    eff.write_text("7" * 700 + "\n")
    where = str(eff)[len(str(root)):]

    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    await col.connect()
    try:
        out = []
        for depth in ("g", "g", "g", "g"):
            rep = await col.tick(depth)
            out.append((rep.snapshot.request, col.pipeline.want_static,
                        [p.message for p in rep.snapshot.problems if p.source == where],
                        [p.message for p in rep.snapshot.problems if "said unchanged" in p.message]))
        ticks = out
    finally:
        await col.close()

    assert [t[0][0] for t in ticks] == ["s", "g", "g", "g"], ticks  # one static frame, at the start only
    for request, want_static, said, lost in ticks:
        assert not want_static and lost == [], (request, lost)
        assert len(said) == 1 and "number of 640 digits or more" in said[0], (request, said)


@pytest.mark.parametrize("shell", SHELLS)
def test_the_precheck_s_bound_is_1_mib_to_the_byte(tmp_path, shell):
    """Issue 34 item 19: the precheck (probe.sh: find -size +1048576c) refuses, unopened, a file of a tree
    that is not the kernel's larger than 1 MiB; the only oversized fixture was 1 GiB, so a bound raised 1000x
    passed. At the boundary: a file of exactly 1 MiB is read whole, 1 MiB + 1 byte and 2 MiB are refused
    before they are opened ("not read"; a bound raised let awk open them: "cut at")."""
    from nodes import dual_socket_intel

    root = tmp_path / "node"
    sim = SimNode(dual_socket_intel(), root).write()
    node0 = "/sys/devices/system/node/node0/numastat"
    node1 = "/sys/devices/system/node/node1/numastat"
    leaf = sim.cg_dir(sim.spec.pods[0], sim.spec.pods[0].containers[0])
    big = f"{leaf}/cpu.stat"
    text = (root / node0.lstrip("/")).read_text()
    pad = 1048576 - len(text)
    line = "x" * 1023 + "\n"  # lines of 1 KiB, the last one shorter: exactly 1 MiB, a newline at its end
    text += line * (pad // len(line)) + ("y" * (pad % len(line) - 1) + "\n" if pad % len(line) else "")
    (root / node0.lstrip("/")).write_text(text)
    assert os.path.getsize(root / node0.lstrip("/")) == 1 << 20
    os.truncate(root / node1.lstrip("/"), (1 << 20) + 1)  # sparse: no bytes on the disk
    os.truncate(root / big.lstrip("/"), 2 << 20)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{toolbox(tmp_path, shell)}:{old}"
    try:
        rep = asyncio.run(asyncio.wait_for(snapshot("local", Options(root=str(root), frame_timeout=10)), 20))
    finally:
        os.environ["PATH"] = old
    o = rep.to_json()
    said = {e["source"]: e["message"] for e in o["errors"]}
    assert node0 not in said, said  # read whole: not cut, nothing said of it
    assert rep.snapshot.numastat[0]["numa_hit"] > 0 and 1 not in rep.snapshot.numastat
    assert said.get(node1) == "larger than 1048576 bytes: not read", said
    assert said.get(big) == "larger than 1048576 bytes: not read", said
    assert [f["code"] for f in o["findings"] if f["severity"] == "critical"] == []
