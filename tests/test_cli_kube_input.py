"""node/NAME's options on the command line (issue 34): the debug pod's image is a reference a container
runtime can pull (a tag or a digest), refused before anything connects otherwise (one line, exit 2)."""
import pytest

from test_cli_input import last_line, run_watched

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize("image, why", [
    ("", "an image reference is not empty"),
    (" ", "' ' is not an image reference (NAME[:TAG][@sha256:DIGEST], e.g. busybox:1.36)"),
    ("busybox@sha256:abc", "'busybox@sha256:abc': a sha256 digest is 64 lowercase hex digits"),
    ("Busybox:1.36", "'Busybox:1.36' is not an image reference (NAME[:TAG][@sha256:DIGEST], e.g. busybox:1.36)"),
    ("busybox:1.36 --privileged", "'busybox:1.36 --privileged' is not an image reference "
                                  "(NAME[:TAG][@sha256:DIGEST], e.g. busybox:1.36)"),
])
def test_a_bad_image_is_refused_before_connecting(image, why, tmp_path):
    log = tmp_path / "reached"
    r = run_watched(log, "snapshot", "--image", image, "node/worker-1")
    assert (r.returncode, last_line(r)) == (2, f"pinscope snapshot: error: argument --image: {why}"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == "" and "Traceback" not in r.stderr
    assert log.read_text() == ""  # nothing was tried


@pytest.mark.parametrize("image", [
    "busybox:1.36", "busybox", f"busybox@{DIGEST}", f"busybox:1.36@{DIGEST}",
    f"registry.example:5000/tools/busybox@{DIGEST}", "docker.io/library/busybox:1.36-musl", "[::1]:5000/bb:1",
    "ghcr.io/a__b/c.d-e:v1_2",
])
def test_an_image_reference_by_tag_or_digest_is_accepted(image):
    from pinscope.collectors.transport.kube import image_problem

    assert image_problem(image) is None


def test_a_digest_of_the_wrong_length_or_case_is_refused():
    from pinscope.collectors.transport.kube import image_problem

    assert image_problem("busybox@sha256:" + "A" * 64) == ("'busybox@sha256:" + "A" * 64 + "': a sha256 digest is "
                                                           "64 lowercase hex digits")
    assert image_problem("busybox@sha512:" + "a" * 128) is None
    assert image_problem("busybox@sha512:" + "a" * 64) is not None
    assert image_problem("a" * 256) is not None  # a name is at most 255 characters
