"""Which widget and session-state keys each page binds, read from the source: the page's script and every
function of attnviz/ui it reaches (calls, or hands over as a callback), with the values the page passes in.

A key is what a page hands to Streamlit's shared namespace: a `key=` argument, an index into
st.session_state, the first argument of its get/setdefault/pop, a name tested with `in st.session_state`,
a keyword of st.session_state.update, or a key given to share.bind/hold/forget/from_link. Keys built by
f-strings are evaluated with the arguments the callers give; a part that cannot be known becomes "*"."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UI = ROOT / "attnviz" / "ui"
SHARE_KEY_FUNCTIONS = {"bind", "hold", "forget", "from_link"}  # attnviz.ui.share: every argument names keys
STATE_METHODS = {"get", "setdefault", "pop", "__getitem__", "__contains__", "__delitem__"}
UNKNOWN = "*"


def _is_module(dotted: str) -> bool:
    """Whether attnviz.ui.x.y names a module file of the ui folder (not a function of attnviz.ui.x)."""
    return dotted.startswith("attnviz.ui.") and (ROOT / (dotted.replace(".", "/") + ".py")).exists()


@dataclass
class Module:
    name: str  # attnviz.ui.x, or the page's file stem
    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    constants: dict[str, ast.expr] = field(default_factory=dict)  # module-level NAME = expression
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> "attnviz.ui.x" or "attnviz.ui.x:f"

    @classmethod
    def parse(cls, name: str, path: Path) -> "Module":
        m = cls(name, ast.parse(path.read_text(encoding="utf-8")))
        for node in ast.walk(m.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                m._import(node)
        for node in m.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                m.functions[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                m.constants[node.targets[0].id] = node.value
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                    and isinstance(node.value, ast.Tuple) and len(node.targets[0].elts) == len(node.value.elts):
                for target, value in zip(node.targets[0].elts, node.value.elts):  # A, B = "a", "b"
                    if isinstance(target, ast.Name):
                        m.constants[target.id] = value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                m.constants[node.target.id] = node.value
        return m

    def _import(self, node) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("attnviz.ui.") and a.asname:
                    self.aliases[a.asname] = a.name
            return
        mod = node.module or ""
        if node.level:  # relative import inside attnviz/ui
            mod = "attnviz.ui" + (f".{mod}" if mod else "")
        for a in node.names:
            local = a.asname or a.name
            if mod == "attnviz.ui" or _is_module(f"{mod}.{a.name}"):  # a module (ui.x, or ui.x.y of a folder)
                self.aliases[local] = f"{mod}.{a.name}"
            elif mod.startswith("attnviz.ui."):
                self.aliases[local] = f"{mod}:{a.name}"


class Scanner:
    """Keys reached from one script; `keys` maps each key to the places that bind it."""

    def __init__(self, modules: dict[str, Module]):
        self.modules = modules
        self.keys: dict[str, set[str]] = {}
        self._done: set = set()

    # ------------------------------------------------------------------ values
    def value(self, node, env: dict, mod: Module, depth: int = 0) -> set[str] | None:
        """The strings an expression can be (None: not a string the scan can follow)."""
        if depth > 8 or node is None:
            return None
        if isinstance(node, ast.Constant):
            return {node.value} if isinstance(node.value, str) else None
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in mod.constants:
                return self.value(mod.constants[node.id], {}, mod, depth + 1)
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target = mod.aliases.get(node.value.id)
            if target and ":" not in target and target in self.modules:
                other = self.modules[target]
                if node.attr in other.constants:
                    return self.value(other.constants[node.attr], {}, other, depth + 1)
            return None
        if isinstance(node, ast.JoinedStr):
            out = {""}
            for part in node.values:
                if isinstance(part, ast.Constant):
                    vals = {str(part.value)}
                else:
                    vals = self.value(part.value, env, mod, depth + 1) or {UNKNOWN}
                out = {a + b for a in out for b in vals}
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, env, mod, depth + 1), self.value(node.right, env, mod, depth + 1)
            if left is not None or right is not None:
                return {a + b for a in (left or {UNKNOWN}) for b in (right or {UNKNOWN})}
            return None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            out = set()
            for elt in node.elts:
                out |= self.value(elt, env, mod, depth + 1) or set()
            return out or None
        if isinstance(node, ast.Call):
            hit = self._resolve(node.func, mod)
            if hit is not None:
                other, fn = hit
                body = [b for b in fn.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
                if len(body) == 1 and isinstance(body[0], ast.Return):
                    return self.value(body[0].value, self._bind_args(fn, node, env, mod), other, depth + 1)
            return None
        if isinstance(node, ast.IfExp):
            a, b = self.value(node.body, env, mod, depth + 1), self.value(node.orelse, env, mod, depth + 1)
            return (a or set()) | (b or set()) or None
        return None

    def _dict_keys(self, node, env, mod) -> set[str]:
        if isinstance(node, ast.Name) and node.id not in env and node.id in mod.constants:
            node = mod.constants[node.id]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target = mod.aliases.get(node.value.id)
            if target in self.modules and node.attr in self.modules[target].constants:
                return self._dict_keys(self.modules[target].constants[node.attr], {}, self.modules[target])
        if isinstance(node, ast.Dict):
            out = set()
            for k, v in zip(node.keys, node.values):
                if k is None:  # {**other}
                    out |= self._dict_keys(v, env, mod)
                    continue
                out |= self.value(k, env, mod) or set()
            return out
        if isinstance(node, ast.DictComp) and node.generators:
            it = node.generators[0].iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in ("items", "keys"):
                it = it.func.value
            return self._dict_keys(it, env, mod)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # {...} | {...}
            return self._dict_keys(node.left, env, mod) | self._dict_keys(node.right, env, mod)
        return self.value(node, env, mod) or set()

    # ------------------------------------------------------------------ keys
    def _add(self, values, where: str) -> None:
        for v in values or ():
            if v and v != UNKNOWN:
                self.keys.setdefault(v, set()).add(where)

    @staticmethod
    def _state_names(func_body) -> set[str]:
        """Local names bound to st.session_state (`s = st.session_state`)."""
        names = set()
        for node in ast.walk(func_body):
            if isinstance(node, ast.Assign) and _is_state(node.value, set()):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        return names

    def _resolve(self, func, mod: Module):
        """(Module, FunctionDef) of a called or referenced attnviz.ui function or a function of `mod`."""
        if isinstance(func, ast.Name):
            if func.id in mod.functions:
                return mod, mod.functions[func.id]
            target = mod.aliases.get(func.id, "")
            if ":" in target:
                name, fn = target.split(":")
                other = self.modules.get(name)
                if other and fn in other.functions:
                    return other, other.functions[fn]
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            target = mod.aliases.get(func.value.id, "")
            other = self.modules.get(target)
            if other and func.attr in other.functions:
                return other, other.functions[func.attr]
        return None

    def _functions_in_constant(self, node, mod: Module):
        """The functions named in a module constant that `node` refers to (a table of views, say)."""
        owner, expr = None, None
        if isinstance(node, ast.Name):
            target = mod.aliases.get(node.id, "")
            if ":" in target:
                name, const = target.split(":")
                owner = self.modules.get(name)
                expr = owner.constants.get(const) if owner else None
            elif node.id in mod.constants:
                owner, expr = mod, mod.constants[node.id]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = self.modules.get(mod.aliases.get(node.value.id, ""))
            expr = owner.constants.get(node.attr) if owner else None
        if owner is None or expr is None:
            return []
        return [(owner, owner.functions[n.id]) for n in ast.walk(expr)
                if isinstance(n, ast.Name) and n.id in owner.functions]

    def scan_script(self, mod: Module) -> None:
        self._scan_body(mod.tree, {}, mod, f"{mod.name}")
        for fn in mod.functions.values():  # functions of the page's own script (callbacks)
            self._scan_function(mod, fn, {})

    def _scan_function(self, mod: Module, fn, env: dict) -> None:
        sig = (mod.name, fn.name, fn.lineno, tuple(sorted((k, tuple(sorted(v))) for k, v in env.items())))
        if sig in self._done:
            return
        self._done.add(sig)
        self._scan_body(fn, env, mod, f"{mod.name}.{fn.name}")

    def _bind_args(self, fn, call: ast.Call, env: dict, mod: Module) -> dict:
        args = fn.args
        params = [a.arg for a in args.posonlyargs + args.args]
        out = {}
        for name, node in zip(params, call.args):
            v = self.value(node, env, mod)
            if v is not None:
                out[name] = v
        for kw in call.keywords:
            if kw.arg:
                v = self.value(kw.value, env, mod)
                if v is not None:
                    out[kw.arg] = v
        defaults = args.defaults
        for name, node in zip(params[len(params) - len(defaults):], defaults):
            if name not in out:
                v = self.value(node, {}, mod)
                if v is not None:
                    out[name] = v
        for a, node in zip(args.kwonlyargs, args.kw_defaults):
            if a.arg not in out and node is not None:
                v = self.value(node, {}, mod)
                if v is not None:
                    out[a.arg] = v
        return out

    def _bind_loop(self, target, it, env: dict, mod: Module, local: dict) -> None:
        """Give a loop's target the strings its iterable holds (each part of a tuple target its own)."""
        if isinstance(it, ast.Name) and it.id in local and it.id not in env:
            it = local[it.id]
        if isinstance(it, ast.Call):
            fname = getattr(it.func, "id", "")
            if fname == "enumerate" and it.args:
                if isinstance(target, ast.Tuple) and len(target.elts) == 2:
                    self._bind_loop(target.elts[1], it.args[0], env, mod, local)
                return
            if fname == "zip":
                if isinstance(target, ast.Tuple) and len(target.elts) == len(it.args):
                    for t, a in zip(target.elts, it.args):
                        self._bind_loop(t, a, env, mod, local)
                return
            if fname in ("sorted", "list", "tuple", "reversed") and it.args:
                self._bind_loop(target, it.args[0], env, mod, local)
                return
            if isinstance(it.func, ast.Attribute) and it.func.attr in ("items", "keys"):
                self._bind_loop(target.elts[0] if isinstance(target, ast.Tuple) else target, it.func.value, env,
                                mod, local)
                return
        if isinstance(target, ast.Tuple):
            if isinstance(it, (ast.List, ast.Tuple)):  # a literal list of tuples: each position apart
                for i, t in enumerate(target.elts):
                    column = [e.elts[i] for e in it.elts if isinstance(e, (ast.Tuple, ast.List)) and len(e.elts) > i]
                    if column:
                        self._bind_loop(t, ast.Tuple(elts=column, ctx=ast.Load()), env, mod, local)
            return
        if isinstance(target, ast.Name):
            v = self.value(it, env, mod)
            if v is None:
                v = self._dict_keys(it, env, mod) or None
            if v is not None:
                env[target.id] = env.get(target.id, set()) | v

    def _scan_body(self, body, env: dict, mod: Module, where: str) -> None:
        env = dict(env)
        state = self._state_names(body) | {name for name, value in mod.constants.items() if _is_state(value, set())}
        nodes = list(_walk_own(body))
        # loop variables over known strings: `for key in (lk, hk)`, `for i, key in enumerate((lk, hk))`,
        # `for key, value in DEFAULTS.items()`, `for col, (fig, key) in zip(columns, figs)`
        local = {n.targets[0].id: n.value for n in nodes if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0], ast.Name) and isinstance(n.value, (ast.List, ast.Tuple, ast.Dict))}
        for node in nodes:
            if isinstance(node, (ast.For, ast.comprehension)):
                self._bind_loop(node.target, node.iter, env, mod, local)
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                t = node.targets[0]
                if isinstance(t, ast.Name):
                    v = self.value(node.value, env, mod)
                    if v is not None:
                        env[t.id] = env.get(t.id, set()) | v
                elif isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(t.elts) == len(node.value.elts):
                    for a, b in zip(t.elts, node.value.elts):
                        v = self.value(b, env, mod) if isinstance(a, ast.Name) else None
                        if v is not None:
                            env[a.id] = env.get(a.id, set()) | v
        called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):  # a nested function (a part's body runner)
                self._scan_function(mod, node, env)
            elif isinstance(node, ast.Subscript) and _is_state(node.value, state):
                self._add(self.value(node.slice, env, mod), where)
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                    and any(_is_state(c, state) for c in node.comparators):
                self._add(self.value(node.left, env, mod), where)
            elif isinstance(node, ast.Call):
                self._call(node, env, mod, where, state)
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(getattr(node, "ctx", None), ast.Load) \
                    and id(node) not in called:
                hit = self._resolve(node, mod)  # a function handed over (a callback): scanned as it may run
                if hit and hit[1] is not body:
                    self._scan_function(hit[0], hit[1], {})
                elif hit is None:
                    for other, fn in self._functions_in_constant(node, mod):
                        self._scan_function(other, fn, {})

    def _call(self, node: ast.Call, env, mod, where, state) -> None:
        for kw in node.keywords:
            if kw.arg == "key":
                self._add(self.value(kw.value, env, mod), where)
        f = node.func
        if isinstance(f, ast.Attribute) and _is_state(f.value, state):
            if f.attr in STATE_METHODS and node.args:
                self._add(self.value(node.args[0], env, mod), where)
            elif f.attr == "update":
                self._add({kw.arg for kw in node.keywords if kw.arg}, where)
                for a in node.args:
                    self._add(self._dict_keys(a, env, mod), where)
            return
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        hit = self._resolve(f, mod)
        if name in SHARE_KEY_FUNCTIONS and (hit is None or hit[0].name == "attnviz.ui.share"):
            for a in node.args:
                self._add(self._dict_keys(a, env, mod), where)
        if hit is not None:
            other, fn = hit
            self._scan_function(other, fn, self._bind_args(fn, node, env, mod))


def _is_state(node, names: set[str]) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "session_state":
        return True
    return isinstance(node, ast.Name) and node.id in names


def _walk_own(root):
    """The nodes of a function or module body, nested function bodies left out (they are scanned apart)."""
    stack = list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
        elif isinstance(node, ast.Lambda):
            stack.extend(ast.iter_child_nodes(node.body) if not isinstance(node.body, ast.expr) else [node.body])


def ui_modules() -> dict[str, Module]:
    mods = {}
    for path in sorted(UI.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts)
        if name.endswith(".__init__"):
            name = name[: -len(".__init__")]
        mods[name] = Module.parse(name, path)
    return mods


def script_keys(path: Path, modules: dict[str, Module] | None = None) -> dict[str, set[str]]:
    """{key: places binding it} for the script at `path` (a page file, or app.py)."""
    modules = modules if modules is not None else ui_modules()
    scanner = Scanner(modules)
    page = Module.parse(path.stem, path)
    scanner.scan_script(page)
    return scanner.keys
