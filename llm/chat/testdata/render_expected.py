#!/usr/bin/python3
"""Writes expected.json: every (template, conversation) case of this
directory, and every snippet of snippets.json (a small template exercising
one construct, rendered with its variables alone), rendered by Python's jinja2 set up as Hugging Face transformers'
apply_chat_template sets it up. Not run by the tests; run it by hand with
Debian's python3-jinja2 (apt-get install -y python3-jinja2):

    cd llm/chat/testdata && /usr/bin/python3 render_expected.py

The environment, as transformers' chat_template_utils builds it: an
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
loopcontrols extension and a {% generation %} block that only renders its
body; tojson replaced by json.dumps(x, ensure_ascii=False, indent=indent,
separators=separators, sort_keys=sort_keys); raise_exception raising
TemplateError; strftime_now formatting a fixed time (FIXED_NOW below, so the
outputs do not change day by day). The template is rendered with messages,
tools (None when the conversation has none), documents (likewise),
add_generation_prompt, the model's special tokens (bos_token, eos_token,
...) and the case's extra variables, which win over the special tokens.
"""

import json
import sys
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime(2024, 7, 26, 9, 30, 0)

HERE = Path(__file__).resolve().parent


class Generation(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: renders the body as is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


class Raised(TemplateError):
    pass


def raise_exception(message):
    raise Raised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# The cases: every template with every conversation, with and without the
# generation prompt, then these extra variables.
EXTRA = [
    ("llama-3.1", "tools", {"tools_in_user_message": False}),
    ("llama-3.1", "basic", {"date_string": "01 Jan 2025"}),
    ("llama-3.1", "single", {"builtin_tools": ["brave_search", "code_interpreter", "wolfram_alpha"]}),
    ("llama-3.2", "tools", {"tools_in_user_message": False}),
    ("qwen-3", "single", {"enable_thinking": False}),
    ("qwen-3", "thinking", {"enable_thinking": False}),
    ("deepseek-v3.1", "single", {"thinking": True}),
    ("phi-3.5", "basic", {"eos_token": "<|end|>"}),
]


def main():
    templates = json.loads((HERE / "templates.json").read_text(encoding="utf-8"))
    convs = {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((HERE / "conversations").glob("*.json"))
    }
    env = environment()
    cases = []
    for tname in templates:
        for cname in convs:
            for agp in (True, False):
                cases.append((tname, cname, agp, {}))
        for t, c, v in EXTRA:
            if t == tname:
                cases.append((t, c, True, v))
    out = []
    for tname, cname, agp, extra in cases:
        spec = templates[tname]
        source = (HERE / "templates" / spec["file"]).read_text(encoding="utf-8")
        conv = convs[cname]
        kwargs = {**spec["tokens"], **extra}
        case = {"template": tname, "conversation": cname, "add_generation_prompt": agp}
        if extra:
            case["vars"] = extra
        try:
            case["prompt"] = env.from_string(source).render(
                messages=conv["messages"],
                tools=conv.get("tools"),
                documents=conv.get("documents"),
                add_generation_prompt=agp,
                **kwargs,
            )
        except Raised as e:
            case["raised"] = str(e)
        except Exception as e:  # any other failure of the template
            case["error"] = f"{type(e).__name__}: {e}"
        out.append(case)
    snippets = []
    for sn in json.loads((HERE / "snippets.json").read_text(encoding="utf-8")):
        case = {"name": sn["name"]}
        try:
            case["output"] = env.from_string(sn["template"]).render(**sn["vars"])
        except Raised as e:
            case["raised"] = str(e)
        except Exception as e:
            case["error"] = f"{type(e).__name__}: {e}"
        snippets.append(case)
    doc = {
        "generator": "render_expected.py",
        "jinja2": jinja2.__version__,
        "python": sys.version.split()[0],
        "now": FIXED_NOW.isoformat(),
        "cases": out,
        "snippets": snippets,
    }
    with open(HERE / "expected.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
