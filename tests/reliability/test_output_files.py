"""Output files never follow a link, never land on a name someone could plant, never half-written (issue 34).

Sites run the console as root in directories others can write. Every output (sweep --json, --prom,
--junit, --exclude-out, the console's export, bundles, check-local --json) goes through ``console.files``:
a link at the target, or at any name a predictable temporary scheme would use, is never written through;
a refused target is exit 2 with the reason; a write that fails leaves no temporary file behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import main
from console.commands.evidence import write_archive
from console.inventory import load_inventory
from console.sim.launcher import SimCluster
from console.sim.specs import GpuModel
from console.ui.operations import export_report
from console.ui.state import SweepProgress
from tests.multinode.localnodes import local_cluster, shim_dir
from tests.multinode.simcluster import start_cluster

ROOT = Path(__file__).resolve().parents[2]
SECRET = "the victim's own content\n"
OUTPUTS = ("--json", "--prom", "--junit", "--exclude-out")


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    with start_cluster(1, GpuModel.MI300X) as cluster:
        yield cluster


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.write_text(SECRET)
    return victim


def _plant_timed_links(target: Path, victim: Path, seconds: float) -> int:
    """Links at every ``.<name>.<ms>.tmp`` of the next ``seconds``: the millisecond scheme's every name."""
    now = int(time.time() * 1000)
    for ms in range(now, now + int(seconds * 1000)):
        os.symlink(victim, target.with_name(f".{target.name}.{ms}.tmp"))
    return int(seconds * 1000)


def _sweep(sim: SimCluster, tmp_path: Path, *extra: str) -> int:
    return main(
        ["sweep", "-i", str(sim.inventory_path), "--store", str(tmp_path / "h.db"), "--probes", "quick", *extra]
    )


@pytest.mark.parametrize("option", OUTPUTS)
def test_a_sweep_refuses_to_write_through_a_link_at_its_output(
    sim: SimCluster, tmp_path: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = _victim(tmp_path)
    out = tmp_path / "out"
    out.symlink_to(victim)
    code = _sweep(sim, tmp_path, option, str(out))
    err = capsys.readouterr().err
    assert victim.read_text() == SECRET
    assert out.is_symlink() and os.readlink(out) == str(victim)
    assert code == 2 and "symbolic link" in err and "Traceback" not in err


def test_a_sweep_never_writes_through_links_at_predictable_temporary_names(sim: SimCluster, tmp_path: Path) -> None:
    """25,000 planted links made ``sweep --prom`` write into the victim (issue 34); now no name is guessable."""
    victim = _victim(tmp_path)
    outs = {option: tmp_path / f"out{option}" for option in ("--prom", "--junit", "--exclude-out")}
    for path in outs.values():
        _plant_timed_links(path, victim, 20)
    code = _sweep(sim, tmp_path, *(arg for option, path in outs.items() for arg in (option, str(path))))
    assert code == 0
    assert victim.read_text() == SECRET
    for path in outs.values():
        assert not path.is_symlink() and path.stat().st_size > 0 and path.read_text() != SECRET
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out") and not p.is_symlink()]
    assert left == []  # no temporary file of ours stays behind


def test_force_overwrite_replaces_another_users_file_but_never_a_link(
    sim: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user takes root")
    theirs = tmp_path / "theirs.json"
    theirs.write_text(SECRET)
    os.chown(theirs, 65534, 65534)
    assert _sweep(sim, tmp_path, "--json", str(theirs)) == 2
    assert "belongs to uid 65534" in capsys.readouterr().err and theirs.read_text() == SECRET
    assert _sweep(sim, tmp_path, "--json", str(theirs), "--force-overwrite") == 0
    assert '"sweep_id"' in theirs.read_text()
    link = tmp_path / "link.json"
    link.symlink_to(_victim(tmp_path))
    assert _sweep(sim, tmp_path, "--json", str(link), "--force-overwrite") == 2
    assert "symbolic link" in capsys.readouterr().err and link.is_symlink()
    assert (tmp_path / "victim").read_text() == SECRET


def test_a_refused_output_is_refused_before_the_sweep_runs(
    sim: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "out.prom").symlink_to(_victim(tmp_path))
    assert _sweep(sim, tmp_path, "--prom", str(tmp_path / "out.prom")) == 2
    assert "sweep " not in capsys.readouterr().out  # no sweep ran, so no summary line
    assert not (tmp_path / "h.db").exists() or "running" not in (tmp_path / "h.db").read_bytes().decode("latin-1")


def test_a_bundle_never_writes_through_a_link_at_its_path_or_its_partial_name(tmp_path: Path) -> None:
    from console.files import OutputRefused

    victim = _victim(tmp_path)
    archive = tmp_path / "n1.tar.gz"
    for planted in (archive, archive.with_name(archive.name + ".partial")):
        planted.symlink_to(victim)
    with pytest.raises(OutputRefused, match="symbolic link"):
        write_archive(archive, {"a.out": b"x"}, node="n1", sweep_id=1, redactor=None)
    assert victim.read_text() == SECRET and archive.is_symlink()
    archive.unlink()
    write_archive(archive, {"a.out": b"x"}, node="n1", sweep_id=1, redactor=None)
    assert victim.read_text() == SECRET and archive.stat().st_size > 0


def test_the_consoles_export_never_writes_through_a_link(tmp_path: Path) -> None:
    from console.files import OutputRefused

    inventory_path = tmp_path / "c.toml"
    inventory_path.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "n1"\n')
    victim = _victim(tmp_path)
    progress = SweepProgress(sweep_id=7)
    (tmp_path / "instinct-console-sweep7.json").symlink_to(victim)
    with pytest.raises(OutputRefused, match="symbolic link"):
        export_report(load_inventory(str(inventory_path)), [], progress, tmp_path)
    assert victim.read_text() == SECRET


def test_check_local_json_refuses_links_and_its_pid_named_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nodes").mkdir()
    inventory = local_cluster(tmp_path / "nodes", ["gpu001"])
    monkeypatch.setenv("PATH", f"{shim_dir(tmp_path / 'nodes', 'gpu001')}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu001")
    victim = _victim(tmp_path)
    out = tmp_path / "local.json"
    out.with_name(f".{out.name}.{os.getpid()}.part").symlink_to(victim)
    assert main(["check-local", "-i", str(inventory), "--json", str(out)]) == 0
    assert victim.read_text() == SECRET and '"node": "gpu001"' in out.read_text()
    out.unlink()
    out.symlink_to(victim)
    assert main(["check-local", "-i", str(inventory), "--json", str(out)]) == 2
    assert victim.read_text() == SECRET and out.is_symlink()


def test_check_local_json_on_a_full_disk_leaves_no_part_file(tmp_path: Path) -> None:
    """A file size limit fails the write as a full disk does: the verdict is printed, exit 6 ("report not
    written") with the reason, no traceback, no leftovers."""
    (tmp_path / "nodes").mkdir()
    inventory = local_cluster(tmp_path / "nodes", ["gpu001"])
    outdir = tmp_path / "out"
    outdir.mkdir()
    limited = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))\n"
        "from console.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PATH": f"{shim_dir(tmp_path / 'nodes', 'gpu001')}:{os.environ['PATH']}"}
    env["SLURMD_NODENAME"] = "gpu001"
    argv = [sys.executable, "-c", limited, "check-local", "-i", str(inventory), "--json", str(outdir / "r.json")]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False)
    assert proc.returncode == 6, proc.stderr[-2000:]
    said = proc.stdout + proc.stderr
    assert "Traceback" not in said and "report not written" in said and "File too large" in said
    assert sorted(p.name for p in outdir.iterdir()) == []


def test_the_helper_refuses_what_is_not_a_regular_file_of_ours(tmp_path: Path) -> None:
    from console.files import OutputRefused, check_target, write_file

    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    for name, said in (("dir", "not a regular file"), ("fifo", "not a regular file")):
        with pytest.raises(OutputRefused, match=said):
            write_file(tmp_path / name, "x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputRefused, match="symbolic link"):
        check_target(tmp_path / "dangling", force=True)
    assert not (tmp_path / "nowhere").exists()
    write_file(tmp_path / "fresh", "new\n")
    mode = (tmp_path / "fresh").stat().st_mode & 0o777
    assert (tmp_path / "fresh").read_text() == "new\n" and mode == 0o666 & ~_umask()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "dir", "fifo", "fresh"]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
