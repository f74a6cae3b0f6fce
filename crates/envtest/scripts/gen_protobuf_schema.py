#!/usr/bin/env python3
"""Generates src/http/protobuf/schema.txt: the protobuf wire layout of the
Kubernetes kinds the server decodes (field number, JSON name, wire type).

Inputs are the sources of two crates.io packages in the cargo registry:
k8s-pb (prost bindings: field numbers and types) and k8s-openapi (the JSON
field names). Run from the repository root after `cargo fetch`:

    python3 crates/envtest/scripts/gen_protobuf_schema.py
"""
import glob
import os
import re
import sys

REGISTRY = os.path.expanduser("~/.cargo/registry/src")
PB = sorted(glob.glob(f"{REGISTRY}/*/k8s-pb-0.9.0/src"))
OPENAPI = sorted(glob.glob(f"{REGISTRY}/*/k8s-openapi-0.29.0/src/v1_33"))
OUT = os.path.join(os.path.dirname(__file__), "..", "src", "http", "protobuf", "schema.txt")
# Modules whose kinds the server serves (and what they reference).
MODULES = ["api/core", "api/apps", "api/batch", "api/coordination", "api/rbac", "api/events",
           "api/policy", "api/admissionregistration", "api/autoscaling", "api/networking",
           "api/discovery", "apimachinery"]


def json_names():
    names = {}
    for f in glob.glob(f"{OPENAPI[-1]}/**/*.rs", recursive=True):
        for json, key in re.findall(r'"([A-Za-z0-9_$\-]+)" => Field::Key_(\w+)', open(f).read()):
            names.setdefault(key.rstrip("_"), set()).add(json)
    return names


# prost's snake_case of acronym-heavy proto names, mapped back to the JSON names.
OVERRIDES = {
    "non_resource_ur_ls": "nonResourceURLs",
    "pod_cid_rs": "podCIDRs",
    "target_ww_ns": "targetWWNs",
    "server_address_by_client_cid_rs": "serverAddressByClientCIDRs",
    "a_pi_group": "apiGroup",
}


def snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def camel(snake):
    parts = snake.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def module_of(path):
    rel = os.path.relpath(os.path.dirname(path), PB[-1])
    return rel.replace(os.sep, ".")


def resolve(module, rust_type):
    rust_type = rust_type.replace("::prost::alloc::boxed::Box<", "").rstrip(">").strip()
    parts = [p for p in rust_type.split("::") if p]
    mod = module.split(".")
    while parts and parts[0] == "super":
        mod = mod[:-1]
        parts = parts[1:]
    return ".".join(mod + parts)


ATTR = re.compile(r"#\[prost\(([^\]]*)\)\]\s*pub (?:r#)?(\w+):")


def fields(body):
    """(attribute, field name, Rust type) of each prost field; types may span lines."""
    for m in ATTR.finditer(body):
        depth, i = 0, m.end()
        while i < len(body):
            c = body[i]
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
            elif c == "," and depth == 0:
                break
            i += 1
        yield m.group(1), m.group(2), " ".join(body[m.end():i].split())
STRUCT = re.compile(r"pub struct (\w+) \{(.*?)\n\}", re.S)


def main():
    if not PB or not OPENAPI:
        sys.exit("k8s-pb 0.9.0 and k8s-openapi 0.29.0 must be in the cargo registry (cargo fetch)")
    names = json_names()
    lines = []
    for mod_dir in MODULES:
        for f in sorted(glob.glob(f"{PB[-1]}/{mod_dir}/**/mod.rs", recursive=True)):
            module = module_of(f)
            src = open(f).read()
            for sname, body in STRUCT.findall(src):
                lines.append(f"M {module}.{sname}")
                for attr, fname, rtype in fields(body):
                    tag = re.search(r'tag = "(\d+)"', attr).group(1)
                    if fname in OVERRIDES:
                        names[fname] = {OVERRIDES[fname]}
                    candidates = names.get(fname, set())
                    json = next(iter(candidates)) if len(candidates) == 1 else camel(fname)
                    if len(candidates) > 1:
                        exact = [c for c in candidates if c.lower() == camel(fname).lower()]
                        json = exact[0] if exact else json
                    kind = attr.split(",")[0].strip()
                    card = "r" if "repeated" in attr else "o"
                    if kind.startswith("btree_map") or kind.startswith("map"):
                        value = re.search(r'"string, (\w+)"', attr).group(1)
                        if value == "message":
                            inner = re.search(r"String,\s*(.*?),?\s*>$", rtype).group(1)
                            lines.append(f"F {tag} {json} map message {resolve(module, inner)}")
                        else:
                            lines.append(f"F {tag} {json} map {value}")
                    elif kind == "message":
                        inner = re.search(r"<(.*)>$", rtype).group(1)
                        if inner.startswith("::core::option::Option<"):
                            inner = inner[len("::core::option::Option<"):-1]
                        target = resolve(module, inner)
                        # Go embeds these structs inline in JSON; protobuf nests them.
                        if not candidates and snake(target.split(".")[-1]) == fname:
                            card = "inline"
                        lines.append(f"F {tag} {json} {card} message {target}")
                    else:
                        scalar = kind.split("=")[0].strip()
                        lines.append(f"F {tag} {json} {card} {scalar}")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as out:
        out.write("# Generated by scripts/gen_protobuf_schema.py from k8s-pb 0.9.0 and k8s-openapi 0.29.0.\n")
        out.write("\n".join(lines) + "\n")
    print(f"{len(lines)} lines -> {OUT}")


if __name__ == "__main__":
    main()
