#!/bin/sh
# Build pinscope's image, push it to your registry, and set it in deploy/kustomization.yaml:
#   sh deploy/publish.sh registry.example.com/team/pinscope:0.1.0
# then: kubectl apply -k deploy/
# CONTAINER_TOOL picks the builder (default docker; podman takes the same arguments).
# Where `kustomize` is installed, `kustomize edit set image` sets it; else the `images:` entry is edited here.
set -eu
usage="usage: sh deploy/publish.sh REGISTRY/NAME:TAG"
ref=${1:?$usage}
case $ref in
  *[!A-Za-z0-9._:/-]*|*//*|-*|*:) echo "pinscope: not an image reference: $ref ($usage)" >&2; exit 2 ;;
esac
name=${ref%:*}
tag=${ref##*:}
if [ "$name" = "$ref" ] || [ -z "$tag" ] || [ "${tag#*/}" != "$tag" ]; then
  echo "pinscope: give the image a tag: $ref ($usage)" >&2; exit 2
fi

deploy=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$deploy")
tool=${CONTAINER_TOOL:-docker}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/pyproject.toml")
source=$(git -C "$repo" remote get-url origin 2>/dev/null || true)
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || true)

"$tool" build -f "$deploy/Dockerfile" -t "$ref" --build-arg "VERSION=$version" \
  --build-arg "SOURCE=$source" --build-arg "REVISION=$revision" "$repo"
"$tool" push "$ref"

if command -v kustomize >/dev/null 2>&1; then
  (cd "$deploy" && kustomize edit set image "pinscope=$ref")
else
  sed -i -e "s|^\(    newName:\).*|\1 $name|" -e "s|^\(    newTag:\).*|\1 \"$tag\"|" "$deploy/kustomization.yaml"
fi
echo "pinscope: pushed $ref and set it in $deploy/kustomization.yaml; now: kubectl apply -k $deploy"
