"""The repository's API contract (`API.md`) names only what the package has."""

import dataclasses
import pathlib
import re

import pytest

import jaxgjk as jg

API = (pathlib.Path(__file__).parents[1] / "API.md").read_text()


def _owner(path: str):
    owner = jg
    for name in path.split("."):
        owner = getattr(owner, name)
    return owner


@pytest.mark.parametrize("path", sorted(set(re.findall(r"`jg\.([A-Za-z_][\w.]*)", API))))
def test_every_jg_name_exists(path):
    _owner(path)


@pytest.mark.parametrize("name", sorted(set(re.findall(r"^\| `(\w+)` \|", API, flags=re.M))))
def test_every_shape_in_the_table_exists_and_has_a_support(name):
    assert issubclass(getattr(jg, name), jg.Shape)


@pytest.mark.parametrize("name", sorted(set(re.findall(r"`[Pp]ose\.(\w+)", API))))
def test_every_pose_method_exists(name):
    assert hasattr(jg.Pose, name)


@pytest.mark.parametrize("name", sorted(set(re.findall(r"`[Rr]obot\.(\w+)", API))))
def test_every_robot_name_exists(name):
    robot = pytest.importorskip("jaxgjk.robot")
    assert hasattr(robot.Robot, name) or name in {field.name for field in dataclasses.fields(robot.Robot)}


@pytest.mark.parametrize("name", sorted(set(re.findall(r"`reference\.(\w+)", API))))
def test_every_reference_name_exists(name):
    from jaxgjk import reference

    assert callable(getattr(reference, name))
