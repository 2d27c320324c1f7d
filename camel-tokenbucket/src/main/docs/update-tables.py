#!/usr/bin/env python3
"""Rewrites the option and header tables of tokenbucket-component.adoc from the generated component JSON.

Camel's own build does this with its doc updater; ours does not run it. After changing an annotation:
  mvn -B -pl camel-tokenbucket process-classes && python3 camel-tokenbucket/src/main/docs/update-tables.py
src-it's ComponentDocsIT fails while the page and the JSON disagree.
"""
import json
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
ADOC = HERE / "tokenbucket-component.adoc"
JSON = HERE.parent.parent / "generated/resources/META-INF/io/tokenbucket/camel/tokenbucket.json"
HEAD = "[width=\"100%\",cols=\"2,5,^1,2\",options=\"header\"]\n|===\n| Name | Description | Default | Type\n"


def text(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def option_row(name, o):
    description = ("*Required* " if o.get("required") else "") + o["description"]
    if o.get("enum"):
        description += " Enum values: " + ", ".join(o["enum"]) + "."
    java_type = o["javaType"].rsplit(".", 1)[-1]
    return f"| *{name}* ({o['group']}) | {description} | {text(o.get('defaultValue'))} | {java_type}\n"


def table(rows):
    return HEAD + "".join(rows) + "|===\n"


def replace(adoc, marker, body):
    start, end = f"// {marker}: START\n", f"// {marker}: END"
    i, j = adoc.index(start) + len(start), adoc.index(end)
    return adoc[:i] + body + adoc[j:]


model = json.loads(JSON.read_text())
c = model["component"]
adoc = ADOC.read_text()

component = model["componentProperties"]
adoc = replace(adoc, "component options", "=== Component Options\n\nThe Token Bucket component supports "
               f"{len(component)} options, which are listed below.\n\n"
               + table(option_row(n, o) for n, o in component.items()))

paths = {n: o for n, o in model["properties"].items() if o["kind"] == "path"}
params = {n: o for n, o in model["properties"].items() if o["kind"] == "parameter"}
adoc = replace(adoc, "endpoint options", "=== Endpoint Options\n\nThe Token Bucket endpoint is configured using URI "
               f"syntax:\n\n----\n{c['syntax']}\n----\n\nwith the following path and query parameters:\n\n"
               f"==== Path Parameters ({len(paths)} parameters)\n\n"
               + table(option_row(n, o) for n, o in paths.items())
               + f"\n==== Query Parameters ({len(params)} parameters)\n\n"
               + table(option_row(n, o) for n, o in params.items()))

headers = model["headers"]
adoc = replace(adoc, "component headers", "=== Message Headers\n\nThe Token Bucket component supports "
               f"{len(headers)} message headers, which are listed below.\n\n"
               + table(f"| *{n}* ({h['group']}) Constant: `{h['constantName'].split('#')[1]}` | {h['description']} | "
                       f"{text(h.get('defaultValue'))} | {h['javaType']}\n" for n, h in headers.items())
               + "\nThe constants are in `io.tokenbucket.camel.TokenBucketConstants`.\n")

adoc = re.sub(r"(?m)^:description: .*$", lambda m: ":description: " + c["description"], adoc, count=1)
ADOC.write_text(adoc)
print(f"{ADOC.name}: {len(component)} component options, {len(paths) + len(params)} endpoint options, "
      f"{len(headers)} headers")
