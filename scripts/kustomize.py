#!/usr/bin/env python3
"""Assembles a kustomization the way `kubectl kustomize` does, for the subset deploy/k8s uses
(resources, namespace, images, configMapGenerator and secretGenerator with literals or files,
generatorOptions): the static check needs no kubectl. Usage: scripts/kustomize.py DIR > all.yaml"""
import base64
import os
import sys

import yaml


def build(directory):
    with open(os.path.join(directory, "kustomization.yaml")) as handle:
        kustomization = yaml.safe_load(handle)
    known = {"apiVersion", "kind", "resources", "namespace", "images", "configMapGenerator", "secretGenerator",
             "generatorOptions"}
    unknown = set(kustomization) - known
    if unknown:
        sys.exit(f"{directory}/kustomization.yaml: not supported here: {', '.join(sorted(unknown))}")
    documents = []
    for resource in kustomization.get("resources", []):
        path = os.path.join(directory, resource)
        if os.path.isdir(path):
            documents += build(path)
        else:
            with open(path) as handle:
                documents += [document for document in yaml.safe_load_all(handle) if document]
    for kind, key in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
        for generator in kustomization.get(key, []):
            data = {}
            for literal in generator.get("literals", []):
                name, value = literal.split("=", 1)
                data[name] = value
            for entry in generator.get("files", []):
                name, _, path = entry.partition("=") if "=" in entry else (os.path.basename(entry), "", entry)
                with open(os.path.join(directory, path)) as handle:
                    data[name] = handle.read()
            document = {"apiVersion": "v1", "kind": kind, "metadata": {"name": generator["name"]}}
            if kind == "Secret":
                document["type"] = "Opaque"
                document["data"] = {name: base64.b64encode(value.encode()).decode() for name, value in data.items()}
            else:
                document["data"] = data
            documents.append(document)
    namespace = kustomization.get("namespace")
    images = {image["name"]: image for image in kustomization.get("images", [])}
    for document in documents:
        if namespace and document["kind"] not in ("Namespace",):
            document["metadata"]["namespace"] = namespace
        spec = document.get("spec", {})
        pod = spec.get("template", {}).get("spec", {})
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            name = container["image"].split(":")[0]
            if name in images:
                image = images[name]
                container["image"] = image.get("newName", name) + ":" + image.get("newTag", "latest")
    return documents


if __name__ == "__main__":
    yaml.safe_dump_all(build(sys.argv[1]), sys.stdout, sort_keys=False)
