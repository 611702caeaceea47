"""A method is a named recipe: a registered model, the components it is built from, a preprocessor
and a calibrator, with the hyperparameters that differ from the components' own defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The roles every method has, around its model's own sub-components (a composite model's
#: ``components``). Each role is filled by a registered component of the same kind.
OUTER_ROLES = ("preprocessor", "model", "calibrator")


@dataclass(frozen=True)
class MethodSpec:
    """What a ``zslbench_methods`` hook returns.

    ``model`` names a registered model. A composite model's sub-components are named by role in
    ``components={role: name}`` (the paper's pipeline: ``model="prototype", components={"embedder":
    "bt", "regressor": "gp"}``). ``params`` maps a role (``"model"``,
    ``"embedder"``, ...) to constructor values for that component; a value given here or with
    ``--set`` is fixed, the rest keep the component's documented default and a declared search
    space is searched. ``citation`` says where the method and its defaults come from.
    """

    name: str
    model: str
    preprocessor: str = "clip"
    calibrator: str = "gamma"
    components: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    description: str = ""
    #: What the paper calls it, e.g. "L_BT + GP (ours)", for leaderboards.
    paper_name: str = ""
    citation: str = ""

    def sub_components(self) -> dict[str, str]:
        """The model's own components by role."""
        return dict(self.components)

    def roles(self) -> dict[str, str]:
        """Every role of the method and the registered name that fills it, in pipeline order."""
        return {
            "preprocessor": self.preprocessor,
            "model": self.model,
            **self.sub_components(),
            "calibrator": self.calibrator,
        }


@dataclass(frozen=True)
class Citation:
    """Where method ``name`` comes from: what a ``zslbench_citations`` hook returns, and what
    ``zslbench list --method NAME`` prints.

    ``authors`` as the paper lists them; ``venue`` and ``year`` of its published version; ``doi``
    and/or ``arxiv`` (an arXiv id such as ``2210.06120``), or ``url`` of the proceedings page for
    a paper that has neither; ``code`` the authors' official code, or a sentence starting "none"
    saying what exists instead. Kept apart from :class:`MethodSpec` so that a citation can be
    corrected without touching the module that defines a method's components (its code digest).
    """

    name: str
    authors: str
    title: str
    venue: str
    year: int
    code: str
    doi: str = ""
    arxiv: str = ""
    url: str = ""
    note: str = ""

    def missing(self) -> list[str]:
        """The fields a citation must have and this one lacks (empty when complete)."""
        out = [f for f in ("authors", "title", "venue", "code") if not getattr(self, f)]
        if not isinstance(self.year, int) or not 1950 < self.year < 2100:
            out.append("year")
        if not (self.doi or self.arxiv or self.url):
            out.append("doi, arxiv or url")
        return out

    def lines(self) -> list[str]:
        """The citation as ``zslbench list --method`` prints it."""
        ids = [f"doi:{self.doi}" if self.doi else "", f"arXiv:{self.arxiv}" if self.arxiv else ""]
        where = ", ".join(i for i in ids if i) or self.url
        out = [
            f"{self.authors}. {self.title}. {self.venue} {self.year}. {where}",
            f"code: {self.code}",
        ]
        return out + ([self.note] if self.note else [])


def method_roles(
    registry: Any, name: str, swaps: dict[str, str] | None = None
) -> dict[str, tuple[str, str]]:
    """Every role of method ``name`` -> (the kind of component that fills it, its registered
    name), in pipeline order, with ``swaps`` (``--set role=name``) applied. The sub-roles are
    those the (possibly swapped) model declares in ``components``; a mistake is one
    ``ConfigError`` line."""
    from zslbench.errors import ConfigError

    swaps = swaps or {}
    spec: MethodSpec = registry.get("method", name).obj
    roles = dict(spec.roles())
    model_cls = registry.get("model", swaps.get("model", roles["model"])).obj
    wanted = dict(getattr(model_cls, "components", {}))
    missing = [r for r in wanted if r not in roles]
    if missing:
        raise ConfigError(
            f"method {name!r}: model {model_cls.name!r} needs a component for {', '.join(missing)}",
            hint="name it in the MethodSpec",
        )
    roles = {r: n for r, n in roles.items() if r in OUTER_ROLES or r in wanted}
    for role, new in swaps.items():
        if role not in roles:
            raise ConfigError(
                f"--set {role}={new}: method {name!r} has no role {role!r}",
                hint=f"its roles: {', '.join(roles)}",
            )
        roles[role] = new
    return {r: (r if r in OUTER_ROLES else wanted[r], n) for r, n in roles.items()}
