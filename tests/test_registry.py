import pytest

from hf_querygen.errors import InvalidInputError
from hf_querygen.registry import Registry


def test_register_get_and_decorator():
    registry: Registry[object] = Registry("widget")
    registry.register("a", 1)

    @registry.register("b")
    def make_b():
        return 2

    assert registry.get("a") == 1 and registry.get("b") is make_b
    assert registry.names() == ["a", "b"] and "a" in registry and len(registry) == 2
    registry.register("a", 1)  # the same object again is harmless


def test_unknown_name_suggests_close_matches_and_taken_name_is_refused():
    registry: Registry[int] = Registry("preset")
    registry.register("liu2018-dual-decoder", 1)
    with pytest.raises(InvalidInputError, match=r"unknown preset 'liu2018-dual-decoderr'.*Did you mean"):
        registry.get("liu2018-dual-decoderr")
    with pytest.raises(InvalidInputError, match="already registered"):
        registry.register("liu2018-dual-decoder", 2)
    registry.register("liu2018-dual-decoder", 2, replace=True)
    assert registry.get("liu2018-dual-decoder") == 2


def test_modules_are_imported_on_first_lookup(tmp_path, monkeypatch):
    (tmp_path / "registers_late.py").write_text(
        "from tests_registry_target import REG\nREG.register('late', 42)\n"
    )
    (tmp_path / "tests_registry_target.py").write_text(
        "from hf_querygen.registry import Registry\nREG = Registry('thing', modules=('registers_late',))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from tests_registry_target import REG

    assert REG.get("late") == 42


def test_a_task_has_one_name_and_its_pipeline_string_as_the_one_alias():
    import warnings

    from hf_querygen.tasks.base import TASKS, get_task, pipeline_task_names

    for name, task in TASKS.items():
        assert task.name == name
        assert get_task(name) is task
    # the pipeline() task string resolves to a task serving it, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for pipeline_task, name in pipeline_task_names().items():
            assert get_task(pipeline_task).pipeline_task == pipeline_task
            assert get_task(pipeline_task) is TASKS.get(name)
    with pytest.raises(Exception, match="unknown task 'nl2kww'.*nl2kw"):
        get_task("nl2kww")
