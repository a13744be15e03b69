#!/usr/bin/env bash
# Records the protobuf request bodies of kubectl's imperative commands as test
# fixtures, next to what the same command prints with `--dry-run=client -o json`.
#
#   framework/apiserver/src/http/protobuf/gen/capture.sh KUBECTL [VERSION_DIR]
#
# e.g. `capture.sh /usr/lib/google-cloud-sdk/bin/kubectl.1.33 kubectl-1.33`.
# Run from the workspace root; needs python3 and builds `kubeforge dev-server`.
set -euo pipefail
KUBECTL=${1:?usage: capture.sh KUBECTL [VERSION_DIR]}
VERSION_DIR=${2:-kubectl-$("$KUBECTL" version --client -o json | python3 -c 'import json,sys; v=json.load(sys.stdin)["clientVersion"]; print(v["major"]+"."+v["minor"].rstrip("+"))')}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT="$HERE/../fixtures/$VERSION_DIR"
WORK=$(mktemp -d)
mkdir -p "$OUT"
cleanup() {
  [[ -n "${PROXY_PID:-}" ]] && kill "$PROXY_PID" 2>/dev/null || true
  [[ -n "${SERVER_PID:-}" ]] && kill "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

cargo build -q -p kubeforge-cli
target/debug/kubeforge dev-server --listen 127.0.0.1:0 --write-kubeconfig "$WORK/server.kubeconfig" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 50); do [[ -s "$WORK/server.kubeconfig" ]] && break; sleep 0.2; done
SERVER_PORT=$(grep -o 'server: https://127.0.0.1:[0-9]*' "$WORK/server.kubeconfig" | grep -o '[0-9]*$')
TOKEN=$(grep 'token:' "$WORK/server.kubeconfig" | awk '{print $2}')
grep 'certificate-authority-data' -A1 "$WORK/server.kubeconfig" | tail -1 | tr -d ' ' | base64 -d >"$WORK/ca.pem"
PROXY_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
CAPTURE_TOKEN=$TOKEN python3 "$HERE/capture_proxy.py" 127.0.0.1 "$SERVER_PORT" "$WORK/ca.pem" "$WORK" "$PROXY_PORT" &
PROXY_PID=$!
cat >"$WORK/proxy.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- cluster: {server: "http://127.0.0.1:$PROXY_PORT"}
  name: capture
contexts:
- context: {cluster: capture, user: capture, namespace: default}
  name: capture
current-context: capture
users:
- name: capture
  user: {}
KC
export KUBECONFIG="$WORK/proxy.kubeconfig" KUBECACHEDIR="$WORK/cache"
sleep 0.5

# capture NAME ARGS...: runs `kubectl ARGS` (which fails with 415 until the
# server decodes protobuf; the body is what we want) and
# `kubectl ARGS --dry-run=client -o json`.
capture() {
  local name=$1
  shift
  rm -f "$WORK/last.pb" "$WORK/last.txt"
  "$KUBECTL" "$@" >/dev/null 2>&1 || true
  if [[ ! -f "$WORK/last.pb" ]]; then
    echo "no protobuf body for $name" >&2
    return
  fi
  cp "$WORK/last.pb" "$OUT/$name.pb"
  cp "$WORK/last.txt" "$OUT/$name.txt"
  if [[ "${NO_DRY_RUN:-}" != 1 ]]; then
    # The dry-run flags go before a `--` that starts the container command.
    local args=() rest=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do args+=("$1"); shift; done
    rest=("$@")
    "$KUBECTL" "${args[@]}" --dry-run=client -o json "${rest[@]}" >"$OUT/$name.json"
  fi
  echo "captured $name"
}

capture namespace create namespace team-a
capture deployment create deployment web --image=nginx:1.27 --replicas=2 --port=80
capture deployment-zero-replicas create deployment idle --image=nginx --replicas=0
capture deployment-multi create deployment multi --image=nginx --image=redis
capture configmap create configmap cfg --from-literal=a=1 --from-literal=b=two
printf 'bin\000\001\377\376data' >"$WORK/blob.bin"
capture configmap-binary create configmap bin --from-file=blob.bin="$WORK/blob.bin"
capture secret-generic create secret generic sec --from-literal=user=admin --from-literal='pw=s3cr3t!' --type=Opaque
capture secret-docker-registry create secret docker-registry reg --docker-server=r.example.com --docker-username=u --docker-password=p
capture serviceaccount create serviceaccount robot
capture job create job once --image=busybox -- echo hi
capture cronjob create cronjob nightly --image=busybox --schedule='*/5 * * * *' --restart=OnFailure -- date
capture role create role reader --verb=get,list,watch --resource=pods,configmaps --resource-name=a
capture rolebinding create rolebinding reader-b --role=reader --serviceaccount=default:robot --user=alice --group=devs
capture clusterrole create clusterrole creader --verb=get --resource=pods --non-resource-url=/healthz
capture clusterrole-aggregated create clusterrole agg --aggregation-rule=rbac.example.com/aggregate=true
capture clusterrolebinding create clusterrolebinding creader-b --clusterrole=creader --group=devs
capture service-clusterip create service clusterip svc --tcp=80:8080 --tcp=443:8443
capture service-headless create service clusterip headless --clusterip=None
capture service-nodeport create service nodeport np --tcp=5678:8080 --node-port=30080
capture service-externalname create service externalname ext --external-name=example.com
capture quota create quota q1 --hard=cpu=1,memory=1Gi,pods=10 --scopes=BestEffort
capture priorityclass create priorityclass high --value=1000 --description='high prio' --preemption-policy=Never
capture pdb-min-available create poddisruptionbudget pdb --selector=app=web --min-available=50%
capture pdb-max-unavailable create poddisruptionbudget pdb2 --selector=app=web --max-unavailable=1
capture ingress create ingress ing --rule='foo.com/bar*=svc:8080,tls=my-cert' --class=nginx --annotation=a=b
capture ingress-default-backend create ingress ing2 --default-backend=svc:http
# Commands that need an existing object: create it as JSON first.
"$KUBECTL" create cronjob cj --image=busybox --schedule='* * * * *' --dry-run=client -o json |
  "$KUBECTL" apply --validate=false -f - >/dev/null
"$KUBECTL" create deployment app --image=nginx --dry-run=client -o json |
  "$KUBECTL" apply --validate=false -f - >/dev/null
capture job-from-cronjob create job manual --from=cronjob/cj
capture hpa autoscale deployment app --min=1 --max=3 --cpu-percent=50
NO_DRY_RUN=1 capture tokenrequest create token robot --duration=10m --audience=api
# The access reviews `kubectl auth` sends (answered, so no dry run).
NO_DRY_RUN=1 capture selfsubjectaccessreview auth can-i get deployments/web --subresource=scale -n team-a
NO_DRY_RUN=1 capture selfsubjectaccessreview-nonresource auth can-i get /metrics
NO_DRY_RUN=1 capture selfsubjectrulesreview auth can-i --list -n team-a
NO_DRY_RUN=1 capture selfsubjectreview auth whoami
