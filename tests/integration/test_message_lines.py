"""runner-client's one-line messages stay one line: a line break or a
carriage return inside what they quote (a Kptfile's image, a subpackage's
directory name) is written as \\n or \\r, so it can neither cut the message
nor forge a progress line ("[PASS] ...") after it."""

import pytest

from krmtest import explain, fn, runner_client as client, serving

FORGED = '[PASS] "example.com/forged:v1" in 0s'


@pytest.fixture(scope="module")
def multi(module_launcher):
    return serving(module_launcher, fn("multi-fn.py"))


def kptfile(dir, steps):
    dir.mkdir(parents=True, exist_ok=True)
    (dir / "Kptfile").write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n"
                                 "pipeline:\n  mutators:\n" + steps)


def forged_lines(err):
    return [line for line in err.splitlines() if line.startswith(("[PASS]", "[RUNNING]", "[FAIL]"))
            and "forged" in line]


def test_an_image_with_a_line_break_in_a_kptfile_error(multi, tmp_path):
    kptfile(tmp_path, '  - image: "example.com/a:v1\\n' + FORGED.replace('"', '\\"') + '\\r"\n')
    res = client("render", "--addr", multi.addr, str(tmp_path))
    assert res.returncode == 2, explain(res)
    assert res.err.count("\n") == 1, res.err
    assert '"example.com/a:v1\\n' + FORGED + '\\r"' in res.err, res.err
    assert forged_lines(res.err) == []


def test_a_subpackage_named_with_a_line_break(multi, tmp_path):
    root = tmp_path / "pkg"
    kptfile(root, "  - image: example.com/none:v1\n    configMap: {op: none}\n")
    sub = root / ("sub\n" + FORGED + "\r")
    kptfile(sub, "  - image: example.com/fail:v1\n    configMap: {op: fail}\n")
    res = client("render", "--addr", multi.addr, str(root))
    assert res.returncode == 1, explain(res)
    escaped = "sub\\n" + FORGED + "\\r"
    assert f'Package "{escaped}":\n' in res.err, res.err
    assert f'runner-client render: subpackage "{escaped}" failed: nothing is written\n' in res.err
    assert forged_lines(res.err) == [], res.err
