#!/usr/bin/env bash
# Build and run the beam_tensorize Dataflow flex template.
#
#   templates/flex_template.sh build  PROJECT REGION BUCKET [IMAGE]
#   templates/flex_template.sh run    PROJECT REGION BUCKET INPUT CONFIG OUTPUT [extra --parameters ...]
#
# With DRY_RUN=1 the gcloud / docker commands are printed, not executed.
set -euo pipefail
cd "$(dirname "$0")/.."

run() { if [ "${DRY_RUN:-0}" = 1 ]; then printf '%q ' "$@"; echo; else "$@"; fi; }

action=${1:?build or run}
project=${2:?project}
region=${3:?region}
bucket=${4:?bucket (without gs://)}
spec="gs://${bucket}/templates/beam_tensorize.json"

case "$action" in
  build)
    image=${5:-"${region}-docker.pkg.dev/${project}/beam-tensorize/launcher:latest"}
    run docker build -f templates/Dockerfile -t "$image" .
    run docker push "$image"
    run gcloud dataflow flex-template build "$spec" \
      --image "$image" --sdk-language PYTHON --metadata-file templates/metadata.json \
      --project "$project"
    ;;
  run)
    input=${5:?input}; config=${6:?config}; output=${7:?output}
    shift 7
    run gcloud dataflow flex-template run "tensorize-$(date +%Y%m%d-%H%M%S)" \
      --template-file-gcs-location "$spec" --project "$project" --region "$region" \
      --parameters "input=${input}" --parameters "config=${config}" --parameters "output=${output}" "$@"
    ;;
  *) echo "unknown action: $action (build or run)" >&2; exit 2 ;;
esac
