"""Plugin discovery: built-ins through entry points, -p, autoload off, broken and duplicate plugins."""

from __future__ import annotations

import sys
import textwrap
from importlib.metadata import EntryPoint

import pytest

from zslbench import registry as registry_mod
from zslbench.errors import ConfigError, PluginError
from zslbench.registry import load_registry

PAPER_METHODS = {"bt-gp", "t-gp", "gp", "krr", "bt-krr"}


def write_plugin(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return name


BUILTINS = {
    "method": PAPER_METHODS,
    "dataset": {"awa1", "awa2", "apy", "cub", "sun", "toy", "synth-awa2"},
    "embedder": {"identity", "bt", "t"},
    "regressor": {"gp", "krr"},
    "calibrator": {"gamma", "none"},
}


def _check_builtins_come_from_the_entry_point_group(reg) -> None:
    """The built-ins are among what the ``zslbench`` distribution's entry points provide; what
    other installed distributions add (a user's plugins) is not our business here."""
    for kind, names in BUILTINS.items():
        ours = {n for n, item in reg.items[kind].items() if item.distribution == "zslbench"}
        assert names <= ours, (kind, names - ours)


def test_builtins_come_from_the_zslbench_entry_point_group():
    reg = load_registry()
    assert not [p for p in reg.problems if "(zslbench)" in p]  # the built-ins load cleanly
    _check_builtins_come_from_the_entry_point_group(reg)


def test_the_builtin_check_holds_with_a_third_party_plugin_installed(tmp_path, monkeypatch):
    """Issue 18: the project's own pytest failed once any third-party plugin was installed."""
    name = write_plugin(
        tmp_path,
        monkeypatch,
        "zsl_installed_elsewhere",
        """
        from zslbench.hookspecs import hookimpl
        from zslbench.methods import MethodSpec

        @hookimpl
        def zslbench_methods():
            return [MethodSpec("theirs", model="prototype", components={"embedder": "identity", "regressor": "krr"})]
    """,
    )
    real = registry_mod.entry_points
    monkeypatch.setattr(
        registry_mod,
        "entry_points",
        lambda group: [*real(group=group), EntryPoint("theirs", name, group)],
    )
    reg = load_registry()
    assert "theirs" in reg.names("method") and reg.items["method"]["theirs"].distribution is None
    _check_builtins_come_from_the_entry_point_group(reg)


def test_autoload_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("ZSLBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")
    reg = load_registry()
    assert reg.names("method") == [] and reg.names("dataset") == []


def test_dash_p_loads_a_module_without_installing(tmp_path, monkeypatch):
    name = write_plugin(
        tmp_path,
        monkeypatch,
        "zsl_extra_method",
        """
        from zslbench.hookspecs import hookimpl
        from zslbench.methods import MethodSpec

        @hookimpl
        def zslbench_methods():
            return [MethodSpec("extra", model="prototype", components={"embedder": "identity", "regressor": "krr"})]
    """,
    )
    monkeypatch.setenv("ZSLBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")
    reg = load_registry([name])
    assert reg.names("method") == ["extra"]
    assert reg.items["method"]["extra"].plugin == name
    assert reg.items["method"]["extra"].distribution is None


def test_a_broken_entry_point_is_reported_by_name_and_the_rest_work(monkeypatch):
    real = registry_mod.entry_points

    def with_broken(group):
        return [
            *real(group=group),
            EntryPoint("broken_thing", "zsl_module_that_does_not_exist", group),
        ]

    monkeypatch.setattr(registry_mod, "entry_points", with_broken)
    reg = load_registry()
    assert len(reg.problems) == 1
    assert "broken_thing" in reg.problems[0] and "failed to import" in reg.problems[0]
    assert "\n" not in reg.problems[0]
    assert PAPER_METHODS <= set(reg.names("method"))
    with pytest.raises(PluginError, match="broken_thing"):
        load_registry(strict=True)


def test_duplicate_names_are_reported_and_the_first_kept(tmp_path, monkeypatch):
    name = write_plugin(
        tmp_path,
        monkeypatch,
        "zsl_dup_method",
        """
        from zslbench.hookspecs import hookimpl
        from zslbench.methods import MethodSpec

        @hookimpl
        def zslbench_methods():
            return [MethodSpec("krr", model="prototype", components={"embedder": "bt", "regressor": "gp"})]
    """,
    )
    reg = load_registry([name])
    assert reg.items["method"]["krr"].obj.components["embedder"] == "identity"
    dup = [p for p in reg.problems if "zsl_dup_method" in p]
    assert len(dup) == 1 and "'krr'" in dup[0] and "built-in plugin" in dup[0]
    with pytest.raises(PluginError, match="krr"):
        load_registry([name], strict=True)


def test_an_installed_plugin_named_before_the_builtins_cannot_replace_one(tmp_path, monkeypatch):
    """Entry points used to load alphabetically, so 'aaa' registering 'krr' won and the warning
    blamed the built-in. Built-ins now register first, whatever the names."""
    module = write_plugin(
        tmp_path,
        monkeypatch,
        "zsl_aaa_clash",
        """
        from zslbench.hookspecs import hookimpl
        from zslbench.methods import MethodSpec

        @hookimpl
        def zslbench_methods():
            return [MethodSpec("krr", model="prototype", components={"embedder": "bt", "regressor": "gp"})]
    """,
    )
    real = registry_mod.entry_points
    monkeypatch.setattr(
        registry_mod,
        "entry_points",
        lambda group: [EntryPoint("aaa", module, group), *real(group=group)],
    )
    reg = load_registry()
    assert reg.items["method"]["krr"].obj.components["embedder"] == "identity"
    assert reg.items["method"]["krr"].distribution == "zslbench"
    clash = [p for p in reg.problems if "'krr'" in p]
    assert len(clash) == 1 and clash[0].startswith("plugin 'aaa'") and "built-in" in clash[0]


def test_a_hook_that_raises_is_reported(tmp_path, monkeypatch):
    name = write_plugin(
        tmp_path,
        monkeypatch,
        "zsl_raising_hook",
        """
        from zslbench.hookspecs import hookimpl

        @hookimpl
        def zslbench_regressors():
            raise RuntimeError("boom")
    """,
    )
    reg = load_registry([name])
    assert any("zsl_raising_hook" in p and "boom" in p for p in reg.problems)
    assert "gp" in reg.names("regressor")


def test_unknown_names_suggest_the_closest():
    reg = load_registry()
    with pytest.raises(ConfigError) as exc:
        reg.get("method", "bt-gpp")
    assert "did you mean 'bt-gp'" in exc.value.one_line()


# -- hooks that take arguments go through the same isolation (issue 42 item 21) -----------------
OPENERS = """
    import click

    from zslbench.hookspecs import hookimpl


    @hookimpl
    def zslbench_open_dataset(location):
        if location.endswith(".raise"):
            raise RuntimeError("opener exploded")
        if location.endswith(".str"):
            return "not a spec"
        return None
"""


@pytest.mark.parametrize("suffix, needle", [(".raise", "opener exploded"), (".str", "not a spec")])
def test_an_open_dataset_hook_that_fails_is_named_and_the_tool_goes_on(
    tmp_path, monkeypatch, suffix, needle
):
    from tests.cli_helpers import invoke_main

    name = write_plugin(tmp_path, monkeypatch, "zsl_bad_opener", OPENERS)
    out = invoke_main(
        "-p",
        name,
        "run",
        "--method",
        "krr",
        "--dataset",
        f"x{suffix}",
        "--dry-run",
        "--results-dir",
        str(tmp_path / "res"),
    )
    assert out.exit_code != 0
    assert "internal error" not in out.stderr, out.stderr
    warning = [line for line in out.stderr.splitlines() if "zsl_bad_opener" in line]
    assert len(warning) == 1 and needle in warning[0], out.stderr
    assert "zslbench_open_dataset" in warning[0]
    with pytest.raises(PluginError, match="zsl_bad_opener"):
        load_registry([name], strict=True).open_dataset(f"x{suffix}")


def test_a_commands_hook_that_raises_is_named_and_every_command_still_works(tmp_path, monkeypatch):
    from tests.cli_helpers import invoke_main

    name = write_plugin(
        tmp_path,
        monkeypatch,
        "zsl_bad_commands",
        """
        from zslbench.hookspecs import hookimpl

        @hookimpl
        def zslbench_commands(cli):
            raise RuntimeError("commands exploded")
        """,
    )
    out = invoke_main("-p", name, "list")
    assert out.exit_code == 0, out.stderr
    assert "krr" in out.stdout
    warning = [line for line in out.stderr.splitlines() if "zsl_bad_commands" in line]
    assert len(warning) == 1 and "commands exploded" in warning[0], out.stderr


def test_a_plugin_command_cannot_replace_a_builtin_one(tmp_path, monkeypatch):
    from tests.cli_helpers import invoke_main

    name = write_plugin(
        tmp_path,
        monkeypatch,
        "zsl_run_thief",
        """
        import click

        from zslbench.hookspecs import hookimpl

        @click.command("run")
        def run():
            click.echo("HIJACKED")

        @click.command("hello")
        def hello():
            click.echo("hello from the plugin")

        @hookimpl
        def zslbench_commands(cli):
            cli.add_command(run)
            cli.add_command(hello)
        """,
    )
    out = invoke_main("-p", name, "run", "--help")
    assert out.exit_code == 0 and "HIJACKED" not in out.stdout and "--method" in out.stdout
    warning = [line for line in out.stderr.splitlines() if "zsl_run_thief" in line]
    assert len(warning) == 1 and "'run'" in warning[0] and "rename" in warning[0], out.stderr
    assert invoke_main("-p", name, "hello").stdout.strip() == "hello from the plugin"
