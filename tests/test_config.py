import pytest

from attndyn.core.config import flatten, parse_assignments, run_id, validate
from attndyn.errors import InputError
from attndyn.models.aim import AIMConfig


def test_parse_assignments_reads_toml_literals_and_bare_strings():
    got = parse_assignments(["d=64", "param=tied", "beta=0.5", "C=[[1, 0.5], [0.5, 1]]", "x=true"])
    assert got == {"d": 64, "param": "tied", "beta": 0.5, "C": [[1, 0.5], [0.5, 1]], "x": True}


def test_parse_assignments_rejects_missing_equals():
    with pytest.raises(InputError, match="key=value"):
        parse_assignments(["d64"])


@pytest.mark.parametrize(
    "values, field",
    [
        ({"dd": 3}, "dd"),
        ({"d": 0}, "d"),
        ({"d": "big"}, "d"),
        ({"rho": 0.0}, "rho"),
        ({"rho": 9.0}, "rho"),
        ({"activation": "sigmoidal"}, "activation"),
        ({"param": "shared"}, "param"),
        ({"L": 2, "C": [[1.0, 2.0], [2.0, 1.0]]}, "positive semi-definite"),
        ({"L": 2, "C": [[1.0, 0.0, 0.0]]}, "L×L"),
    ],
)
def test_bad_values_give_one_line_naming_the_field(values, field):
    with pytest.raises(InputError) as info:
        validate(AIMConfig, values)
    message = str(info.value)
    assert "\n" not in message
    assert field in message


def test_unknown_field_lists_allowed_fields():
    with pytest.raises(InputError, match="allowed fields: .*d, L"):
        validate(AIMConfig, {"dim": 3})


def test_run_id_depends_on_every_field_and_not_on_spelling():
    a = validate(AIMConfig, {"d": 32})
    b = validate(AIMConfig, {"d": 32, "param": "tied"})  # default spelled out
    c = validate(AIMConfig, {"d": 33})
    assert run_id("aim", a) == run_id("aim", b)
    assert run_id("aim", a) != run_id("aim", c)
    assert len(run_id("aim", a)) == 16


def test_flatten_nested_and_lists():
    assert flatten({"a": {"b": 1}, "c": [1, 2]}) == {"a.b": 1, "c": "[1, 2]"}


def test_time_maps_follow_the_paper():
    d = 100
    tied = validate(AIMConfig, {"d": d, "param": "tied", "lr": 0.5})
    direct = validate(AIMConfig, {"d": d, "param": "direct", "lr": 0.5})
    alpha = 0.5 / (d * __import__("math").log(d))
    assert tied.alpha_d == pytest.approx(alpha)
    assert tied.time_per_sample == pytest.approx(4 * alpha / d)  # P1: τ_d = 4α_d/d (tied)
    assert direct.time_per_sample == pytest.approx(alpha / d)  # P1 App. E: τ_d = α_d/d
    assert validate(AIMConfig, {"d": d, "lr_scaling": "d2", "lr": 3}).alpha_d == pytest.approx(
        3 / d**2
    )


# --- strict numbers (issue 14): no NaN/inf, no booleans for numbers, seeds below 2^31 ---------


def _families():
    from attndyn.models import family_names, get_family

    return [(name, get_family(name).Config) for name in family_names()]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_every_float_field_of_every_family_rejects_non_finite(value):
    from attndyn.core.config import _numeric

    checked = 0
    for _name, cls in _families():
        for field, info in cls.model_fields.items():
            if info.annotation is float or (
                _numeric(info.annotation) and float in getattr(info.annotation, "__args__", ())
            ):
                with pytest.raises(InputError, match=f"'{field}'"):
                    validate(cls, {field: value})
                checked += 1
    assert checked > 20


def test_booleans_are_not_numbers_and_seeds_stay_below_2_31():
    from attndyn.claims import get_experiment
    from attndyn.core.config import SEED_LIMIT

    for _name, cls in _families():
        with pytest.raises(InputError, match="'seeds': must be a number, not a boolean"):
            validate(cls, {"seeds": True})
        with pytest.raises(InputError, match="'seed'"):
            validate(cls, {"seed": 2**40})  # would alias seed 0 in PRNGKey's 32 bits
        with pytest.raises(InputError, match="'seed'"):
            validate(cls, {"seed": SEED_LIMIT - 2, "seeds": 4})
        assert validate(cls, {"seed": SEED_LIMIT - 4, "seeds": 4}).seed_list[-1] == SEED_LIMIT - 1
    exp = get_experiment("aim-solvable")
    with pytest.raises(InputError, match="'seeds'"):
        validate(exp.Config, {"seeds": True})
    with pytest.raises(InputError, match="'seed'"):
        validate(exp.Config, {"seed": 2**32})


def test_a_quoted_number_is_a_string_not_a_number():
    """Issue 33 item 5: ``--set 'd="16"'`` gives the TOML string "16", which pydantic would read as
    16; a field that takes only numbers refuses it, a bare 16 is fine, and a field that also
    takes strings (an ``int | Literal[...]``) keeps its strings."""
    from attndyn.core.config import parse_assignments

    for _name, cls in _families():
        with pytest.raises(InputError, match="'seeds': must be a number, not the string '4'"):
            validate(cls, parse_assignments(['seeds="4"']))
        assert validate(cls, parse_assignments(["seeds=4"])).seeds == 4
