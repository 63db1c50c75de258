import json

import numpy as np
import pytest

import kit.audits as audits
from kit.audits import AuditInputs, AuditResult


def test_registry_has_every_metric_of_the_summary_table():
    expected = {
        "M07",
        "M08",
        "M09",
        "M10",
        "M11",
        "M12",
        "M13",
        "M14",
        "EX1",
        "EX2",
        "EX11",
        "EX24",
        "EX25",
        "EX34",
        "MIB",
    }
    assert set(audits.REGISTRY) == expected
    assert all(callable(v.fn) and v.description for v in audits.REGISTRY.values())
    with pytest.raises(ValueError, match="allowed values"):
        audits.get_audit("M99")


def test_result_is_json_plain_with_nan_as_null(tmp_path):
    r = AuditResult(
        metric="M07",
        name="x",
        value=np.float32(0.5),
        values={"a": np.arange(3), "b": float("nan"), "c": {"d": np.bool_(True)}},
        pass_condition="v > 0.3",
        passed=True,
        inputs=AuditInputs(model="zoo/base-m", hook="blocks.1.hook_resid_post", n=3, seeds=[0]),
    )
    d = json.loads(r.to_json())
    assert d["values"] == {"a": [0, 1, 2], "b": None, "c": {"d": True}}
    assert d["inputs"]["hook"] == "blocks.1.hook_resid_post"
    path = audits.save_audits([r], tmp_path / "audits.json")
    back = audits.load_audits(path)
    assert back[0] == r.model_validate(d)
    nan = AuditResult(metric="EX1", name="y", value=float("nan"), pass_condition="", passed=False)
    assert nan.value is None


def test_summary_table_and_findings():
    rs = [
        AuditResult(metric="MIB", name="m", value=0.8, pass_condition="CPR > 0.5", passed=True),
        AuditResult(metric="M07", name="a", value=0.1, pass_condition="> 0.3", passed=False),
        AuditResult(
            metric="M13",
            name="s",
            value=0.2,
            pass_condition="diagnostic",
            passed=True,
            diagnostic=True,
        ),
    ]
    t = audits.summary_table(rs)
    assert list(t["metric"]) == ["M07", "M13", "MIB"], "rows follow the seed's table order"
    assert list(t["verdict"]) == ["FAIL", "report", "pass"]
    text = "\n".join(audits.findings(rs))
    assert "1 audits pass, 1 fail, 1 report-only" in text and "0.8" in text


def test_fail_check_reads_each_case():
    def r(**kw):
        base = dict(metric="M07", name="x", value=0.5, pass_condition="v > 0.3", passed=True)
        return AuditResult(**{**base, **kw})

    assert audits.fail_check(r(diagnostic=True)).startswith("report-only")
    assert audits.fail_check(r().decided("bound 0.2")) == "no: bound 0.2"
    assert audits.fail_check(r(passed=False)) == "yes: the audit fails"
    assert (
        audits.fail_check(r().with_null([0.1, 0.2], "untrained", passed=False))
        == "yes: the null control fails the same condition (null 0.15)"
    )
    uninformative = audits.fail_check(r().with_null([0.4], "untrained", passed=True))
    assert uninformative.startswith("uninformative pass") and "0.4" in uninformative
    assert audits.fail_check(r()).startswith("unchecked")
    t = audits.summary_table([r().with_null([0.4], "untrained", passed=True)])
    assert t["fail_check"][0] == uninformative
