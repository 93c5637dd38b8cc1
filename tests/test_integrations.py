"""linkpatrol beside other tools: a pre-commit hook, a GitHub Action, a container image.

Each is used as its user meets it. pre-commit installs the hooks from this checkout and
runs them when a little repository commits; the action's shell steps run in order, as a
runner runs them, over a folder with a broken link; the image is built and run where a
container engine answers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests.sitesrv import Page

if TYPE_CHECKING:
    from tests.sitesrv import TestSite

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
# building the hooks' environment installs linkpatrol and its dependencies with pip
BUILD_TIMEOUT = 600
RUN_TIMEOUT = 120
builds = pytest.mark.timeout(BUILD_TIMEOUT + RUN_TIMEOUT)


def write(root: Path, files: dict[str, str]) -> None:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


# ---- git --------------------------------------------------------------------------------

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,  # no core.hooksPath, signing or templates of the user's
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Tester",
    "GIT_AUTHOR_EMAIL": "tester@example.org",
    "GIT_COMMITTER_NAME": "Tester",
    "GIT_COMMITTER_EMAIL": "tester@example.org",
}


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env={**os.environ, **GIT_ENV, **(env or {})},
    )
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def new_repository(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--initial-branch", "main")
    return path


# ---- pre-commit -------------------------------------------------------------------------


@dataclass(frozen=True)
class Hooks:
    """The hooks of this checkout, as pre-commit installs them, and where it keeps them."""

    repo: Path
    rev: str
    home: Path

    def config(self, *hook_ids: str) -> str:
        hooks = [{"id": hook_id} for hook_id in hook_ids]
        return yaml.safe_dump(
            {"repos": [{"repo": str(self.repo), "rev": self.rev, "hooks": hooks}]}
        )

    def env(self) -> dict[str, str]:
        # the hooks' environment is built as plain Python, even where the suite's own
        # install was compiled: compiling it would take a minute of the suite, and these
        # tests are about what the hooks do (the suite tests the compiled build through
        # the command it runs)
        return {**GIT_ENV, "PRE_COMMIT_HOME": str(self.home), "LINKPATROL_COMPILE": "0"}

    def pre_commit(
        self, cwd: Path, *args: str, timeout: float = RUN_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **self.env()},
        )

    def project(self, path: Path, files: dict[str, str], *hook_ids: str) -> Path:
        """A repository that uses these hooks, with ``files`` written but not committed."""
        new_repository(path)
        write(path, {".pre-commit-config.yaml": self.config(*hook_ids), **files})
        return path


def snapshot_of_checkout(destination: Path) -> tuple[Path, str]:
    """This checkout as it is on disk, committed in a repository of its own.

    pre-commit installs hooks from a commit. ``try-repo`` on a working tree commits its
    modified files for the purpose, but not the files git does not track yet, so the hooks
    would be installed without them: a copy of every file not ignored is what is on disk.
    """
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted from the working tree is gone
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    new_repository(destination)
    git(destination, "add", "--all")
    git(destination, "-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "snapshot")
    return destination, git(destination, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="session")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Hooks:
    """The hooks, their environment built once for the session (by pip, from the index)."""
    repo, rev = snapshot_of_checkout(tmp_path_factory.mktemp("linkpatrol-checkout"))
    built = Hooks(repo, rev, tmp_path_factory.mktemp("pre-commit-home"))
    scratch = built.project(tmp_path_factory.mktemp("scratch"), {}, "linkpatrol")
    proc = built.pre_commit(scratch, "install-hooks", timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return built


def test_the_hooks_manifest_is_valid_and_writes_nothing_to_the_tree() -> None:
    from pre_commit.clientlib import load_manifest

    manifest = {hook["id"]: hook for hook in load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}

    assert set(manifest) == {"linkpatrol", "linkpatrol-online"}
    for hook in manifest.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["markdown", "html"]
        assert hook["pass_filenames"] is True
        entry = hook["entry"].split()
        assert entry[:2] == ["linkpatrol", "check"]
        assert "--db" in entry and entry[entry.index("--db") + 1] == ":memory:"
        assert {"--check-anchors", "--no-progress", "-q"} <= set(entry)
    assert "--offline" in manifest["linkpatrol"]["entry"].split()
    assert "--offline" not in manifest["linkpatrol-online"]["entry"].split()


BAD_MD = lines(
    "# Notes",  # 1
    "",  # 2
    "Read the [guide](guide.md) first.",  # 3
    "",  # 4
    "Then [install](setup.md#requirements).",  # 5
)
SETUP_MD = lines("# Setup", "", "## Install", "", "Run the installer.")
GOOD_MD = lines("# Welcome", "", "See [installing](setup.md#install).")


@builds
def test_a_commit_with_a_broken_link_is_refused_naming_file_and_line(
    hooks: Hooks, tmp_path: Path
) -> None:
    project = hooks.project(
        tmp_path / "project",
        {"notes.md": BAD_MD, "setup.md": SETUP_MD, "welcome.md": GOOD_MD},
        "linkpatrol",
    )
    proc = hooks.pre_commit(project, "install")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    git(project, "add", "--all")

    commit = subprocess.run(
        ["git", "commit", "-m", "notes"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env={**os.environ, **hooks.env()},
    )

    said = commit.stdout + commit.stderr
    assert commit.returncode != 0, said
    assert "linkpatrol (links in Markdown and HTML, offline)" in said
    assert "Failed" in said and "exit code: 1" in said
    assert "guide.md" in said and "file not found" in said
    assert "setup.md#requirements" in said and "missing anchor" in said
    assert "notes.md:3" in said and "notes.md:5" in said
    assert "welcome.md:" not in said
    assert git(project, "rev-list", "--all") == ""  # nothing committed
    assert not list(project.glob("*.db*"))  # the memory was only for the run

    write(
        project,
        {"notes.md": BAD_MD.replace("guide.md", "setup.md").replace("requirements", "install")},
    )
    git(project, "add", "notes.md")
    git(project, "commit", "--quiet", "-m", "notes, fixed", env=hooks.env())
    assert git(project, "log", "--format=%s") == "notes, fixed\n"


@builds
def test_the_hook_passes_a_clean_file_and_skips_other_files(hooks: Hooks, tmp_path: Path) -> None:
    project = hooks.project(
        tmp_path / "project",
        {
            "notes.md": BAD_MD,
            "setup.md": SETUP_MD,
            "welcome.md": GOOD_MD,
            "site/index.html": '<a href="../setup.md#install">setup</a>\n',
            "links.txt": "[not checked](nowhere.md)\n",
        },
        "linkpatrol",
    )

    proc = hooks.pre_commit(
        project,
        "run",
        "linkpatrol",
        "--color",
        "never",
        "--files",
        "welcome.md",
        "site/index.html",
        "links.txt",
    )

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"linkpatrol \(links in Markdown and HTML, offline\)\.+Passed", proc.stdout)

    text_only = hooks.pre_commit(
        project, "run", "linkpatrol", "--color", "never", "--files", "links.txt"
    )
    assert text_only.returncode == 0
    assert "(no files to check)Skipped" in text_only.stdout


@builds
def test_the_online_hook_requests_outside_links_and_the_offline_one_does_not(
    hooks: Hooks, tmp_path: Path, serve: Callable[[dict[str, Page]], TestSite]
) -> None:
    site = serve({"/ok": Page("<p>here</p>")})
    project = hooks.project(
        tmp_path / "project",
        {
            "links.md": lines(
                "# Links",  # 1
                "",  # 2
                f"- [fine]({site.url('/ok')})",  # 3
                f"- [gone]({site.url('/gone')})",  # 4
            )
        },
        "linkpatrol",
        "linkpatrol-online",
    )

    offline = hooks.pre_commit(project, "run", "linkpatrol", "--files", "links.md")
    assert offline.returncode == 0, offline.stdout + offline.stderr
    assert site.requests() == []

    online = hooks.pre_commit(project, "run", "linkpatrol-online", "--files", "links.md")
    assert online.returncode == 1, online.stdout + online.stderr
    assert site.url("/gone") in online.stdout and "404" in online.stdout
    assert "links.md:4" in online.stdout
    assert site.url("/ok") not in online.stdout
    assert {hit.path for hit in site.requests()} >= {"/ok", "/gone"}


# ---- the GitHub Action ------------------------------------------------------------------

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load_action() -> dict[str, Any]:
    with open(ROOT / "action.yml", encoding="utf-8") as file:
        action: dict[str, Any] = yaml.safe_load(file)
    return action


def expressions(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "if":  # a condition is an expression without ${{ }}
                yield str(value)
            else:
                yield from expressions(value)
    elif isinstance(node, list):
        for item in node:
            yield from expressions(item)
    elif isinstance(node, str):
        yield from EXPRESSION.findall(node)


def test_the_action_is_composite_and_its_expressions_name_what_exists() -> None:
    action = load_action()
    steps = action["runs"]["steps"]
    inputs = set(action["inputs"])
    assert action["runs"]["using"] == "composite"
    assert action["inputs"]["args"]["required"] is True
    assert {"fail", "sarif", "db"} <= inputs

    ids: list[str] = []
    for step in steps:
        for expression in expressions(step):
            for name in re.findall(r"\binputs\.([\w-]+)", expression):
                assert name in inputs, f"{step['name']}: no input {name}"
            for step_id in re.findall(r"\bsteps\.([\w-]+)\.outputs\.", expression):
                assert step_id in ids, f"{step['name']}: no earlier step {step_id}"
        if "run" in step:
            assert step["shell"] == "bash"
            # inputs reach scripts through the environment, never pasted into their text
            assert "${{" not in step["run"], step["name"]
            syntax = subprocess.run(
                ["bash", "-n"], input=step["run"], capture_output=True, text=True, timeout=60
            )
            assert syntax.returncode == 0, f"{step['name']}: {syntax.stderr}"
        else:
            _, _, version = step["uses"].partition("@")
            assert re.fullmatch(r"v\d+", version), step["uses"]
        if "id" in step:
            ids.append(step["id"])

    for name, output in action["outputs"].items():
        assert output["description"], name
        for step_id in re.findall(r"steps\.([\w-]+)\.outputs\.", output["value"]):
            assert step_id in ids, name
    assert {"exit-code", "broken", "warnings", "urls", "sarif"} <= set(action["outputs"])

    by_id = {step["id"]: step for step in steps if "id" in step}
    assert by_id["install"]["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert (
        '-m pip install --quiet --disable-pip-version-check "$ACTION_PATH"'
        in (by_id["install"]["run"])
    )
    uses = {step["uses"].split("@")[0]: step for step in steps if "uses" in step}
    assert list(uses) == [
        "actions/setup-python",
        "actions/cache/restore",
        "github/codeql-action/upload-sarif",
        "actions/cache/save",
    ]
    assert "inputs.sarif != ''" in uses["github/codeql-action/upload-sarif"]["if"]
    restore, save = uses["actions/cache/restore"], uses["actions/cache/save"]
    assert restore["if"] == save["if"] == "inputs.db != ''"
    assert restore["with"]["key"] == save["with"]["key"]
    assert restore["with"]["key"].startswith(restore["with"]["restore-keys"])
    assert "run" in steps[-1], "the verdict comes last, after the upload and the cache"


@dataclass
class ActionRun:
    status: int  # of the job: that of the first run step that failed, or 0
    log: str
    summary: str
    outputs: dict[str, str]  # the action's outputs


def read_outputs(path: Path) -> dict[str, str]:
    outputs = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            name, equals, value = line.partition("=")
            assert equals and "<<" not in name, line
            outputs[name] = value
    return outputs


def run_action(workspace: Path, temp: Path, **inputs: str) -> ActionRun:
    """Run the action's shell steps in order, as a runner would run them in a new job.

    ``uses:`` steps are left out (setting up Python, the cache, the upload), and so is the
    install step, which would pip install linkpatrol from scratch: the linkpatrol of this
    environment stands in as its output. PATH lacks it, so the steps must use that output.
    """
    action = load_action()
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update({name.replace("_", "-"): value for name, value in inputs.items()})
    steps: dict[str, dict[str, str]] = {"install": {"bin": str(VENV_BIN)}}
    assert (VENV_BIN / "linkpatrol").exists()

    def evaluate(text: str) -> str:
        def value(match: re.Match[str]) -> str:
            expression = match.group(1)
            if expression == "github.action_path":
                return str(ROOT)
            kind, _, rest = expression.partition(".")
            if kind == "inputs":
                return values[rest]
            if kind == "steps":
                step_id, outputs, name = rest.split(".")
                assert outputs == "outputs", expression
                return steps.get(step_id, {}).get(name, "")
            raise AssertionError(f"no value for ${{{{ {expression} }}}} here")

        return EXPRESSION.sub(value, text)

    runner_temp = Path(tempfile.mkdtemp(dir=temp))
    summary = runner_temp / "step-summary.md"
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if Path(p).resolve() != VENV_BIN.resolve()
    )
    log: list[str] = []
    status = 0
    for number, step in enumerate(action["runs"]["steps"]):
        if "uses" in step or step.get("id") == "install":
            continue
        script = runner_temp / f"step-{number}.sh"
        script.write_text(step["run"], encoding="utf-8")
        output = runner_temp / f"output-{number}"
        env = {
            **os.environ,
            "PATH": path,
            "RUNNER_TEMP": str(runner_temp),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_ENV": str(runner_temp / "env"),
            "GITHUB_PATH": str(runner_temp / "path"),
            **{name: evaluate(str(text)) for name, text in step.get("env", {}).items()},
        }
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],  # as `shell: bash`
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            env=env,
        )
        log.append(f"## {step['name']} (exit {proc.returncode})\n{proc.stdout}{proc.stderr}")
        if "id" in step:
            steps[step["id"]] = read_outputs(output)
        if proc.returncode != 0:
            status = proc.returncode
            break
    outputs = {name: evaluate(spec["value"]) for name, spec in action["outputs"].items()}
    text = summary.read_text(encoding="utf-8") if summary.exists() else ""
    return ActionRun(status, "\n".join(log), text, outputs)


SITE = {
    "public site/index.html": lines(
        "<!doctype html>",  # 1
        "<title>Home</title>",  # 2
        '<p><a href="about.html">About</a>',  # 3
        '<p><a href="missing.html">Missing</a>',  # 4
        '<p><a href="about.html#team">Team</a>',  # 5
    ),
    "public site/about.html": lines(
        "<!doctype html>", "<title>About</title>", '<h1 id="us">Us</h1>'
    ),
}
ARGS = '"public site"\n--check-anchors'  # quoted words, on several lines


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write(tmp_path / "workspace", SITE)
    return tmp_path / "workspace"


def test_the_action_reports_broken_links_in_the_summary_sarif_and_outputs_and_fails(
    workspace: Path, tmp_path: Path
) -> None:
    run = run_action(workspace, tmp_path, args=ARGS, sarif="reports/links.sarif")

    assert run.status == 1, run.log
    assert "::error title=linkpatrol::2 broken links" in run.log
    assert "### ❌ linkpatrol: 2 broken links" in run.summary
    assert re.search(
        r"\|.*missing\.html.*file not found.*\| `public site/index\.html:4` \|", run.summary
    )
    assert re.search(
        r"\|.*about\.html#team.*missing anchor.*\| `public site/index\.html:5` \|", run.summary
    )

    assert run.outputs["exit-code"] == "1"
    assert run.outputs["broken"] == "2" and run.outputs["warnings"] == "0"
    assert int(run.outputs["urls"]) == 3
    report = json.loads(Path(run.outputs["report-json"]).read_text(encoding="utf-8"))
    assert report["summary"]["reportable"] == 2

    assert run.outputs["sarif"] == "reports/links.sarif"
    sarif = json.loads((workspace / "reports/links.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    results = {
        (result["ruleId"], result["locations"][0]["physicalLocation"]["region"]["startLine"])
        for result in sarif["runs"][0]["results"]
        if "missing.html" in result["message"]["text"]
    }
    assert results == {("broken-link", 4)}
    assert "Broken links (2)" in run.log  # the crawl's own report, in the step's log


def test_with_fail_false_broken_links_warn_and_the_step_passes(
    workspace: Path, tmp_path: Path
) -> None:
    run = run_action(workspace, tmp_path, args=ARGS, fail="false")

    assert run.status == 0, run.log
    assert "::warning title=linkpatrol::2 broken links" in run.log
    assert run.outputs["exit-code"] == "1" and run.outputs["broken"] == "2"
    assert run.outputs["sarif"] == ""
    assert not list(workspace.rglob("*.sarif"))
    assert "missing.html" in run.summary


def test_a_clean_site_passes_with_zero_counts(workspace: Path, tmp_path: Path) -> None:
    write(workspace, {"public site/index.html": '<a href="about.html#us">About us</a>\n'})

    run = run_action(workspace, tmp_path, args=ARGS, sarif="links.sarif")

    assert run.status == 0, run.log
    assert run.outputs["exit-code"] == "0" and run.outputs["broken"] == "0"
    assert "### ✅ linkpatrol: 0 broken links" in run.summary
    assert (
        json.loads((workspace / "links.sarif").read_text(encoding="utf-8"))["runs"][0]["results"]
        == []
    )


def test_report_options_reach_the_rendered_reports_and_the_memory_is_kept(
    workspace: Path, tmp_path: Path
) -> None:
    run = run_action(
        workspace,
        tmp_path,
        args=ARGS + " --report-after=3d --damp-new",
        db=".linkpatrol/site.db",
    )

    # the missing file fails for less than 3 days: listed, not reported; the anchor counts
    assert run.status == 1, run.log
    assert run.outputs["broken"] == "1"
    assert "1 more failing, not reported yet" in run.summary
    assert "about.html#team" in run.summary
    assert (workspace / ".linkpatrol/site.db").is_file()

    again = run_action(
        workspace, tmp_path, args=ARGS + " --report-after=3d --damp-new", db=".linkpatrol/site.db"
    )
    report = json.loads(Path(again.outputs["report-json"]).read_text(encoding="utf-8"))
    assert report["pass"] == 2  # the second run continued the memory of the first


def test_fail_on_new_fails_on_what_the_last_run_did_not_report(
    workspace: Path, tmp_path: Path
) -> None:
    def again() -> ActionRun:
        return run_action(workspace, tmp_path, args=ARGS, db=".linkpatrol/site.db", fail_on="new")

    first = again()  # nothing earlier: every broken link is new
    assert first.status == 1, first.log
    assert first.outputs["broken"] == first.outputs["new"] == "2"
    assert "::error title=linkpatrol::2 broken links, 2 new" in first.log

    second = again()  # the same two: nothing new, the step passes
    assert second.status == 0, second.log
    assert (second.outputs["broken"], second.outputs["new"]) == ("2", "0")
    assert "2 broken links, none that fails the step" in second.log
    assert "### ⚠️ linkpatrol: 2 broken links" in second.summary  # reported, not failing
    assert "0 new since pass 1" in second.summary

    index = workspace / "public site/index.html"
    index.write_text(index.read_text("utf-8") + '<a href="gone.html">Gone</a>\n', "utf-8")
    third = again()
    assert third.status == 1, third.log
    assert (third.outputs["broken"], third.outputs["new"]) == ("3", "1")
    assert re.search(r"\|.*gone\.html.*🆕", third.summary)


def test_a_pass_stopped_early_is_reported_as_incomplete_and_fails(
    workspace: Path, tmp_path: Path
) -> None:
    run = run_action(workspace, tmp_path, args=ARGS + " --max-requests=1")

    assert run.status == 3, run.log
    assert run.outputs["exit-code"] == "3"
    assert "::error title=linkpatrol::stopped early, the report is incomplete" in run.log
    assert "incomplete" in run.summary.lower()
    assert Path(run.outputs["report-json"]).is_file()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (ARGS + " --no-such-option", "unrecognized arguments: --no-such-option"),
        ('"public site', "the args input: No closing quotation"),
    ],
    ids=["unknown option", "unbalanced quote"],
)
def test_a_run_that_cannot_check_fails_even_with_fail_false(
    workspace: Path, tmp_path: Path, args: str, said: str
) -> None:
    run = run_action(workspace, tmp_path, args=args, fail="false")

    assert run.status == 2, run.log
    assert run.outputs["exit-code"] == "2"
    assert said in run.log
    assert "could not check (exit code 2)" in run.summary
    assert "::error title=linkpatrol::could not check (exit code 2)" in run.log


# ---- the manual's examples --------------------------------------------------------------


def readme_examples() -> list[str]:
    """The indented code blocks of the manual's page on CI, dedented."""
    section = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"(?:^(?: {4}.*)?\n)+", section, flags=re.MULTILINE)
    return [
        "\n".join(line[4:] for line in block.splitlines()).strip("\n")
        for block in blocks
        if block.strip()
    ]


def readme_example(marker: str) -> Any:
    (block,) = [block for block in readme_examples() if marker in block]
    return yaml.safe_load(block)


def test_the_readme_examples_use_the_hooks_inputs_and_outputs_that_exist() -> None:
    from pre_commit.clientlib import load_manifest

    hook_ids = {hook["id"] for hook in load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}
    pre_commit = readme_example("repos:")
    (repo,) = pre_commit["repos"]
    assert {hook["id"] for hook in repo["hooks"]} <= hook_ids
    assert "linkpatrol-online" in "\n".join(readme_examples())

    action = load_action()
    workflow = readme_example("security-events: write")
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["links"]["steps"]
    (uses,) = [step for step in steps if step.get("uses", "").startswith("linkpatrol/")]
    assert set(uses["with"]) <= set(action["inputs"])
    assert "sarif" in uses["with"]
    named = re.findall(r"steps\.links\.outputs\.([\w-]+)", json.dumps(steps))
    assert named and set(named) <= set(action["outputs"])

    gitlab = readme_example("paths: [.linkpatrol/]")
    assert gitlab["links"]["artifacts"]["reports"]["junit"] == "links.xml"

    docker = [line for line in "\n".join(readme_examples()).splitlines() if "docker run" in line]
    assert docker and all(":/work" in line for line in docker if " -v " in line)


def test_the_readme_ci_scripts_fail_on_broken_links_and_keep_the_reports(tmp_path: Path) -> None:
    write(tmp_path, {"public/index.html": '<a href="missing.html">gone</a>\n'})
    gitlab = readme_example("paths: [.linkpatrol/]")["links"]["script"]
    script = "\n".join(line for line in gitlab if not line.startswith("pip install"))
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}

    def shell(script: str) -> subprocess.CompletedProcess[str]:
        """All lines in one shell, as GitLab runs a job's script."""
        return subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            env=env,
        )

    job = shell(script)
    assert job.returncode == 1, job.stdout + job.stderr
    assert "public/index.html:1" in job.stdout
    assert "missing.html" in (tmp_path / "links.xml").read_text(encoding="utf-8")

    (quiet, lenient) = [
        block for block in readme_examples() if block.startswith("linkpatrol check")
    ]
    assert shell(quiet.replace("./public", "public")).returncode == 1
    write(tmp_path, {"public/index.html": "<p>nothing linked</p>\n"})
    assert shell(quiet).stdout == ""
    lenient_run = shell(lenient.replace("https://example.org/", "./public"))
    assert lenient_run.returncode == 0
    assert (tmp_path / "links.md").read_text(encoding="utf-8").startswith("### ✅ linkpatrol")


def test_the_readme_recipes_for_new_links_fail_once_per_link_that_breaks(tmp_path: Path) -> None:
    """The GitHub workflow with the memory cached and the GitLab job with a baseline, run
    three times over a site whose links break: each fails on the run a link broke in."""
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}

    def shell(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            env=env,
        )

    def site(*broken: str) -> None:
        links = "".join(f'<a href="{page}">{page}</a>\n' for page in ("here.html", *broken))
        write(tmp_path, {"public/index.html": links, "public/here.html": "<p>here</p>\n"})

    workflow = readme_example("actions/cache/restore")
    steps = workflow["jobs"]["links"]["steps"]
    restore, save = (step for step in steps if step.get("uses", "").startswith("actions/cache"))
    assert restore["with"]["key"] == save["with"]["key"] and restore["with"]["restore-keys"]
    assert restore["with"]["path"] == save["with"]["path"] == ".linkpatrol"
    assert "always()" in save["if"]
    (github,) = [step["run"] for step in steps if "linkpatrol check" in step.get("run", "")]
    assert "--fail-on new" in github

    gitlab = readme_example("--baseline")["links-new"]
    assert gitlab["artifacts"]["paths"] == ["links.json"]
    job = "\n".join(
        line
        for line in gitlab["script"]
        if "pip install" not in line and "CI_JOB_TOKEN" not in line
    )

    def gitlab_job() -> int:
        """A new job: no memory, the last job's links.json as the baseline."""
        for name in ("links.db", "baseline.json"):
            (tmp_path / name).unlink(missing_ok=True)
        if (tmp_path / "links.json").exists():
            (tmp_path / "links.json").rename(tmp_path / "baseline.json")
        return shell(job).returncode

    site("gone.html")
    assert shell(github).returncode == gitlab_job() == 1  # nothing earlier: all new
    assert shell(github).returncode == gitlab_job() == 0  # the same broken link
    site("gone.html", "lost.html")
    assert shell(github).returncode == gitlab_job() == 1  # one more
    junit = (tmp_path / "links.xml").read_text(encoding="utf-8")
    assert re.search(r'<testcase [^>]*lost\.html[^>]*status="new"', junit)
    assert not re.search(r'<testcase [^>]*gone\.html[^>]*status="new"', junit)
    site("lost.html")  # one mended: nothing new
    assert shell(github).returncode == gitlab_job() == 0
    report = json.loads((tmp_path / "links.json").read_text(encoding="utf-8"))
    assert report["compared_with"]["baseline"] == "baseline.json"
    assert [(u["url"].rsplit("/", 1)[1], u["new"]) for u in report["urls"] if u["reportable"]] == [
        ("lost.html", False)
    ]


# ---- the container image ----------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    joined = re.sub(r"\\\n\s*", " ", text)
    instructions = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
    return instructions


def dockerignore_admits() -> Callable[[str], bool]:
    """Whether the build context holds a path, by the rules of .dockerignore (last wins)."""
    rules = []
    for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            negated = line.startswith("!")
            pattern = line.lstrip("!").strip("/")
            regex = "".join(
                ".*"
                if part == "**"
                else "[^/]*"
                if part == "*"
                else "[^/]"
                if part == "?"
                else re.escape(part)
                for part in re.split(r"(\*\*|\*|\?)", pattern)
            )
            rules.append((re.compile(regex), negated))

    def admits(path: str) -> bool:
        parts = path.split("/")
        prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        admitted = True
        for regex, negated in rules:
            if any(regex.fullmatch(prefix) for prefix in prefixes):
                admitted = negated
        return admitted

    return admits


def test_the_dockerfile_builds_a_slim_non_root_image_from_the_package_alone() -> None:
    instructions = dockerfile_instructions()
    stages = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"]
    final = instructions[stages[-1] :]
    for index in stages:
        assert re.fullmatch(r"python:3\.1[1-9]-slim( AS \w+)?", instructions[index][1]), (
            instructions[index]
        )

    users = [rest for keyword, rest in final if keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert ("WORKDIR", "/work") in final
    entrypoints = [rest for keyword, rest in final if keyword == "ENTRYPOINT"]
    assert [json.loads(rest) for rest in entrypoints] == [["linkpatrol"]]
    for keyword, rest in instructions:
        assert "[test]" not in rest
        if keyword in ("ENV", "ARG"):
            assert not re.search(r"(?i)token|secret|password|passwd|api_?key", rest), rest

    admits = dockerignore_admits()
    copied = [
        rest.split()[:-1]
        for keyword, rest in instructions
        if keyword == "COPY" and "--from" not in rest
    ]
    sources = [source for sources in copied for source in sources]
    assert sources and all(admits(source) and (ROOT / source).exists() for source in sources)
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    package = [
        name for name in listed if name.startswith("linkpatrol/") and (ROOT / name).is_file()
    ]
    assert package and all(admits(name) for name in package)
    for outside in (
        ".git/config",
        ".venv/bin/python",
        "tests/test_integrations.py",
        "linkpatrol.db",
        "linkpatrol/__pycache__/cli.cpython-311.pyc",
        ".env",
    ):
        assert not admits(outside), outside


def docker_available() -> str | None:
    """Why the image cannot be built here, or None when a container engine answers."""
    if shutil.which("docker") is None:
        return "no docker command"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        return f"docker info failed: {(info.stderr or info.stdout).strip().splitlines()[-1]}"
    return None


@pytest.mark.timeout(BUILD_TIMEOUT + 2 * RUN_TIMEOUT)
def test_the_image_checks_a_mounted_folder(workspace: Path) -> None:
    reason = docker_available()
    if reason is not None:
        pytest.skip(f"no container engine to build the image with ({reason})")
    tag = f"linkpatrol-test:{uuid.uuid4().hex[:12]}"
    build = subprocess.run(
        ["docker", "build", "--tag", tag, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    try:
        version = subprocess.run(
            ["docker", "run", "--rm", tag, "--version"],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        assert version.returncode == 0 and "0." in version.stdout + version.stderr
        user = f"{os.getuid()}:{os.getgid()}"
        check = subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--user",
                user,
                "--volume",
                f"{workspace}:/work",
                tag,
                "check",
                "public site",
                "--check-anchors",
            ],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        assert check.returncode == 1, check.stdout + check.stderr
        assert "public site/index.html:4" in check.stdout and "missing.html" in check.stdout
        assert (workspace / "linkpatrol.db").is_file()  # the memory, in the mounted folder
    finally:
        subprocess.run(
            ["docker", "image", "rm", "--force", tag], capture_output=True, timeout=RUN_TIMEOUT
        )
