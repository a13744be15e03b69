"""Generates ../table.rs: the protobuf schema of the built-in kinds the
in-process API server decodes, with the Go JSON rules kube-apiserver applies.

Source of truth: the Go type descriptors inside a kubectl binary (see
gotypes.py). Each Go struct field carries its protobuf tag (field number),
its JSON tag (name, omitempty, inline) and its Go type, which says whether
the field is a pointer. Together they say what the JSON of a decoded object
looks like: gogo-protobuf, which client-go uses, always writes non-pointer
fields, even zero ones, and kube-apiserver's Go structs then drop zero values
of `omitempty` fields when they turn into JSON. Reading the rules from the
binary is what lets the decoder agree with `kubectl create --dry-run=client
-o json` field for field.

kubectl does not link apiextensions-apiserver; those types come from another
Go binary of the Cloud SDK (anthoscli), plus the fields added to
apiextensions/v1 after the version it was built with (OVERLAY, transcribed
from apiextensions-apiserver's pkg/apis/apiextensions/v1/types.go and
types_jsonschema.go).

When the k8s-pb crate's sources are in the cargo registry, every generated
message is cross-checked against its prost definitions (field numbers, names
and types), which are generated from the upstream generated.proto files.

Usage (from the workspace root):
    python3 framework/apiserver/src/http/protobuf/gen/generate.py \
        [--kubectl /usr/lib/google-cloud-sdk/bin/kubectl.1.33] \
        [--apiextensions /usr/lib/google-cloud-sdk/bin/anthoscli]
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import json

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "table.rs")

META = "k8s.io/apimachinery/pkg/apis/meta/v1"
APIEXT = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

# (Go type, apiVersion, kind) of every object the decoder accepts.
ROOTS = [
    ("k8s.io/api/core/v1.Namespace", "v1", "Namespace"),
    ("k8s.io/api/core/v1.ConfigMap", "v1", "ConfigMap"),
    ("k8s.io/api/core/v1.Secret", "v1", "Secret"),
    ("k8s.io/api/core/v1.Service", "v1", "Service"),
    ("k8s.io/api/core/v1.ServiceAccount", "v1", "ServiceAccount"),
    ("k8s.io/api/core/v1.Pod", "v1", "Pod"),
    ("k8s.io/api/core/v1.PodTemplate", "v1", "PodTemplate"),
    ("k8s.io/api/core/v1.Event", "v1", "Event"),
    ("k8s.io/api/core/v1.ResourceQuota", "v1", "ResourceQuota"),
    ("k8s.io/api/core/v1.LimitRange", "v1", "LimitRange"),
    ("k8s.io/api/core/v1.Endpoints", "v1", "Endpoints"),
    ("k8s.io/api/core/v1.PersistentVolumeClaim", "v1", "PersistentVolumeClaim"),
    ("k8s.io/api/core/v1.Binding", "v1", "Binding"),
    ("k8s.io/api/events/v1.Event", "events.k8s.io/v1", "Event"),
    ("k8s.io/api/apps/v1.Deployment", "apps/v1", "Deployment"),
    ("k8s.io/api/apps/v1.ReplicaSet", "apps/v1", "ReplicaSet"),
    ("k8s.io/api/apps/v1.StatefulSet", "apps/v1", "StatefulSet"),
    ("k8s.io/api/apps/v1.DaemonSet", "apps/v1", "DaemonSet"),
    ("k8s.io/api/apps/v1.ControllerRevision", "apps/v1", "ControllerRevision"),
    ("k8s.io/api/batch/v1.Job", "batch/v1", "Job"),
    ("k8s.io/api/batch/v1.CronJob", "batch/v1", "CronJob"),
    ("k8s.io/api/coordination/v1.Lease", "coordination.k8s.io/v1", "Lease"),
    ("k8s.io/api/rbac/v1.Role", "rbac.authorization.k8s.io/v1", "Role"),
    ("k8s.io/api/rbac/v1.RoleBinding", "rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("k8s.io/api/rbac/v1.ClusterRole", "rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("k8s.io/api/rbac/v1.ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    (APIEXT + ".CustomResourceDefinition", "apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("k8s.io/api/admissionregistration/v1.ValidatingWebhookConfiguration",
     "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
    ("k8s.io/api/admissionregistration/v1.MutatingWebhookConfiguration",
     "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
    ("k8s.io/api/scheduling/v1.PriorityClass", "scheduling.k8s.io/v1", "PriorityClass"),
    ("k8s.io/api/policy/v1.PodDisruptionBudget", "policy/v1", "PodDisruptionBudget"),
    ("k8s.io/api/policy/v1.Eviction", "policy/v1", "Eviction"),
    ("k8s.io/api/networking/v1.Ingress", "networking.k8s.io/v1", "Ingress"),
    ("k8s.io/api/networking/v1.IngressClass", "networking.k8s.io/v1", "IngressClass"),
    ("k8s.io/api/networking/v1.NetworkPolicy", "networking.k8s.io/v1", "NetworkPolicy"),
    ("k8s.io/api/autoscaling/v1.Scale", "autoscaling/v1", "Scale"),
    ("k8s.io/api/autoscaling/v1.HorizontalPodAutoscaler", "autoscaling/v1", "HorizontalPodAutoscaler"),
    ("k8s.io/api/autoscaling/v2.HorizontalPodAutoscaler", "autoscaling/v2", "HorizontalPodAutoscaler"),
    ("k8s.io/api/authentication/v1.TokenRequest", "authentication.k8s.io/v1", "TokenRequest"),
    ("k8s.io/api/authentication/v1.SelfSubjectReview", "authentication.k8s.io/v1", "SelfSubjectReview"),
    ("k8s.io/api/authorization/v1.SelfSubjectAccessReview", "authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("k8s.io/api/authorization/v1.SubjectAccessReview", "authorization.k8s.io/v1", "SubjectAccessReview"),
    ("k8s.io/api/authorization/v1.LocalSubjectAccessReview", "authorization.k8s.io/v1",
     "LocalSubjectAccessReview"),
    ("k8s.io/api/authorization/v1.SelfSubjectRulesReview", "authorization.k8s.io/v1", "SelfSubjectRulesReview"),
    # Registered in every group version; matched by kind alone (see mod.rs).
    (META + ".DeleteOptions", "meta.k8s.io/v1", "DeleteOptions"),
]

# Go types whose JSON form is not their fields (custom MarshalJSON).
SPECIAL = {
    META + ".Time": "Time",
    META + ".MicroTime": "MicroTime",
    META + ".Duration": "Duration",
    META + ".FieldsV1": "FieldsV1",
    "k8s.io/apimachinery/pkg/api/resource.Quantity": "Quantity",
    "k8s.io/apimachinery/pkg/util/intstr.IntOrString": "IntOrString",
    "k8s.io/apimachinery/pkg/runtime.RawExtension": "RawExtension",
    APIEXT + ".JSON": "Json",
    APIEXT + ".JSONSchemaPropsOrArray": "SchemaOrArray",
    APIEXT + ".JSONSchemaPropsOrBool": "SchemaOrBool",
    APIEXT + ".JSONSchemaPropsOrStringArray": "SchemaOrStringArray",
}


def _t(kind, name=None, pkg=None, elem=None):
    out = {"kind": kind, "name": name or kind}
    if pkg:
        out["pkg"] = pkg
    if elem:
        out["elem"] = elem
    return out


def _field(name, tag, typ):
    return {"name": name, "tag": tag, "embedded": False, "type": typ}


# apiextensions/v1 fields newer than the apiextensions-apiserver anthoscli was
# built with (Kubernetes 1.26 to 1.30 and later), in gotypes.py's format.
OVERLAY_FIELDS = {
    APIEXT + ".ValidationRule": [
        _field("MessageExpression", 'json:"messageExpression,omitempty" protobuf:"bytes,3,opt,name=messageExpression"',
               _t("string")),
        _field("Reason", 'json:"reason,omitempty" protobuf:"bytes,4,opt,name=reason"',
               _t("ptr", elem=_t("string", "v1.FieldValueErrorReason", APIEXT))),
        _field("FieldPath", 'json:"fieldPath,omitempty" protobuf:"bytes,5,opt,name=fieldPath"', _t("string")),
        _field("OptionalOldSelf", 'json:"optionalOldSelf,omitempty" protobuf:"bytes,6,opt,name=optionalOldSelf"',
               _t("ptr", elem=_t("bool"))),
    ],
    APIEXT + ".CustomResourceDefinitionVersion": [
        _field("SelectableFields", 'json:"selectableFields,omitempty" protobuf:"bytes,9,rep,name=selectableFields"',
               _t("slice", elem=_t("struct", "v1.SelectableField", APIEXT))),
    ],
}
OVERLAY_TYPES = {
    APIEXT + ".SelectableField": [
        _field("JSONPath", 'json:"jsonPath" protobuf:"bytes,1,opt,name=jsonPath"', _t("string")),
    ],
}

SCALARS = {
    "bool": "BOOL", "int32": "I32", "int64": "I64", "int": "I64",
    "uint32": "U32", "uint64": "U64", "float64": "F64", "float32": "F32",
    "string": "STR",
}


def load_types(binary, prefixes):
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "gotypes.py"), binary, *prefixes],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def parse_tag(tag, key):
    m = re.search(key + r':"([^"]*)"', tag)
    return m.group(1) if m else None


def type_key(t):
    return f"{t['pkg']}.{t['name'].rsplit('.', 1)[-1]}"


class Generator:
    def __init__(self, types):
        self.types = types
        self.index = {}  # message key -> index
        self.order = []  # message keys in index order
        self.messages = {}  # key -> (special, fields)
        self.queue = []
        self.notes = []

    def message(self, key):
        if key not in self.index:
            self.index[key] = len(self.order)
            self.order.append(key)
            self.queue.append(key)
        return self.index[key]

    def ty(self, t, where):
        """Protobuf element type of a Go type (no pointer, slice or map)."""
        kind = t["kind"]
        if kind in SCALARS:
            return SCALARS[kind]
        if kind == "slice" and t["elem"]["kind"] == "uint8":
            return "BYTES"
        if kind == "struct":
            return f"msg({self.message(type_key(t))})"
        raise SystemExit(f"{where}: unsupported Go type {t}")

    def build(self):
        while self.queue:
            key = self.queue.pop(0)
            if key.startswith("#items:"):
                # A named []T sent as a message with `repeated T items = 1`.
                elem = json.loads(key[len("#items:"):])
                self.messages[key] = (f"Special::Items({self.ty(elem, key)})", [])
                continue
            special = SPECIAL.get(key)
            if special in ("SchemaOrArray", "SchemaOrBool", "SchemaOrStringArray"):
                schema = self.message(APIEXT + ".JSONSchemaProps")
                self.messages[key] = (f"Special::{special}({schema})", [])
                continue
            if special:
                self.messages[key] = (f"Special::{special}", [])
                continue
            if key not in self.types:
                raise SystemExit(f"no Go type descriptor for {key}")
            fields = []
            numbers = set()
            for f in self.types[key]:
                row = self.field(key, f)
                if row is None:
                    continue
                if row[0] in numbers:
                    raise SystemExit(f"{key}: field number {row[0]} twice")
                numbers.add(row[0])
                fields.append(row)
            self.messages[key] = ("Special::None", fields)

    def field(self, key, f):
        where = f"{key}.{f['name']}"
        proto = parse_tag(f["tag"], "protobuf")
        if proto is None or proto == "-":
            return None
        parts = proto.split(",")
        number = int(parts[1])
        label = parts[2] if len(parts) > 2 and "=" not in parts[2] else "opt"
        json_tag = parse_tag(f["tag"], "json")
        json_name, omitempty = "", False
        if json_tag is not None:
            bits = json_tag.split(",")
            json_name, omitempty = bits[0], "omitempty" in bits[1:]
        t = f["type"]
        pointer = t["kind"] == "ptr"
        if pointer:
            t = t["elem"]
        shape = "ONE"
        if t["kind"] == "map":
            shape = f"map({self.ty(t['key'], where)})"
            value = t["elem"]
            if value["kind"] == "slice" and value["elem"]["kind"] != "uint8":
                elem_ty = json.dumps(value["elem"], sort_keys=True)
                ty = f"msg({self.message('#items:' + elem_ty)})"
            else:
                ty = self.ty(value, where)
        elif t["kind"] == "slice" and t["elem"]["kind"] != "uint8":
            elem = t["elem"]
            if elem["kind"] == "ptr":
                elem = elem["elem"]
            if label == "opt" and "pkg" in t:
                # e.g. metav1.Verbs, authentication/v1.ExtraValue.
                elem_ty = json.dumps(elem, sort_keys=True)
                ty = f"msg({self.message('#items:' + elem_ty)})"
            else:
                shape = "REP"
                ty = self.ty(elem, where)
        else:
            ty = self.ty(t, where)
        if json_name == "-":
            emit = "NEVER"
        elif f["embedded"] and json_name == "":
            if t["kind"] != "struct":
                raise SystemExit(f"{where}: inline field of kind {t['kind']}")
            emit = "INLINE"
        else:
            if json_name == "":
                json_name = f["name"]
                self.notes.append(f"{where}: no JSON name, Go uses the field name")
            if pointer:
                emit = "PTR"
            elif shape == "ONE" and ty.startswith("msg(") and not self.is_items(ty):
                # encoding/json never omits a struct value, omitempty or not.
                emit = "ALWAYS"
            elif omitempty:
                emit = "OMIT"
            else:
                emit = "ALWAYS"
        return (number, json_name, ty, shape, emit)

    def is_items(self, ty):
        idx = int(ty[4:-1])
        return self.order[idx].startswith("#items:")


def snake_norm(name):
    return name.replace("_", "").replace("r#", "").lower()


def cross_check(gen, registry_glob):
    """Compares every message with k8s-pb's prost definitions."""
    roots = glob.glob(registry_glob)
    if not roots:
        print("k8s-pb sources not found; skipping the cross-check", file=sys.stderr)
        return 0
    src_root = sorted(roots)[-1]
    problems = 0
    prost_kind = {
        "STR": {"string"}, "BYTES": {"bytes"}, "BOOL": {"bool"}, "I32": {"int32"},
        "I64": {"int64"}, "U32": {"uint32"}, "U64": {"uint64"}, "F64": {"double"}, "F32": {"float"},
    }
    for key in gen.order:
        if key.startswith("#") or key in SPECIAL:
            continue
        pkg, name = key.rsplit(".", 1)
        if pkg.startswith("k8s.io/api/"):
            rel = "api/" + pkg[len("k8s.io/api/"):]
        elif pkg.startswith("k8s.io/apimachinery/"):
            rel = "apimachinery/" + pkg[len("k8s.io/apimachinery/"):]
        elif pkg.startswith("k8s.io/apiextensions-apiserver/"):
            rel = "apiextensions_apiserver/" + pkg[len("k8s.io/apiextensions-apiserver/"):]
        else:
            continue
        path = os.path.join(src_root, "src", rel, "mod.rs")
        if not os.path.exists(path):
            print(f"cross-check: no {path}", file=sys.stderr)
            problems += 1
            continue
        src = open(path).read()
        m = re.search(r"pub struct ((?i:" + re.escape(name) + r")) \{(\}|.*?\n\})", src, re.S)
        if not m:
            print(f"cross-check: {key} not in k8s-pb", file=sys.stderr)
            problems += 1
            continue
        prost = {}
        for attrs, tag, fname in re.findall(r'#\[prost\(([^\]]*?)tag = "(\d+)"\)\]\s*pub ((?:r#)?\w+):', m.group(2)):
            prost[int(tag)] = (attrs, snake_norm(fname))
        ours = {row[0]: row for row in gen.messages[key][1]}
        for number, row in ours.items():
            if number not in prost:
                print(f"cross-check: {key} field {number} ({row[1]}) not in k8s-pb", file=sys.stderr)
                problems += 1
                continue
            attrs, pname = prost[number]
            proto_name = None
            for f in gen.types[key]:
                ptag = parse_tag(f["tag"], "protobuf") or ""
                if re.match(r"[a-z0-9]+," + str(number) + ",", ptag):
                    found = re.search(r"name=([^,]+)", ptag)
                    proto_name = found.group(1) if found else f["name"]
            if proto_name is None or snake_norm(proto_name) != pname:
                print(f"cross-check: {key} field {number}: {proto_name} vs k8s-pb {pname}", file=sys.stderr)
                problems += 1
            _, _, ty, shape, _ = row
            pkind = re.split(r"[ ,=]", attrs.strip())[0]
            if shape.startswith("map("):
                ok = "map" in pkind
            elif ty.startswith("msg("):
                ok = pkind == "message"
            else:
                ok = pkind in prost_kind[ty]
            if ok and shape == "REP":
                ok = "repeated" in attrs
            if not ok:
                print(f"cross-check: {key} field {number} {row[1]}: {ty}/{shape} vs k8s-pb {attrs}", file=sys.stderr)
                problems += 1
        newer = sorted(set(prost) - set(ours))
        if newer:
            gen.notes.append(f"{key}: fields {newer} are newer than the Go binary")
    return problems


def render(gen):
    body = []
    body.append("/// Every message reachable from [`ROOTS`], by index.")
    body.append(f"pub(super) static MESSAGES: [Message; {len(gen.order)}] = [")
    for i, key in enumerate(gen.order):
        special, fields = gen.messages[key]
        name = key if not key.startswith("#items:") else "[]" + json.loads(key[7:]).get("name", "?")
        if not fields:
            body.append(f"    /* {i} */ Message {{ name: {json.dumps(name)}, special: {special}, fields: &[] }},")
            continue
        body.append(f"    /* {i} */ Message {{ name: {json.dumps(name)}, special: {special}, fields: &[")
        for number, json_name, ty, shape, emit in fields:
            body.append(f"        f({number}, {json.dumps(json_name)}, {ty}, {shape}, {emit}),")
        body.append("    ] },")
    body.append("];")
    body.append("")
    body.append("/// The objects a body may carry: apiVersion, kind, message index.")
    body.append(f"pub(super) static ROOTS: [Root; {len(ROOTS)}] = [")
    for key, api_version, kind in ROOTS:
        body.append(f"    Root {{ api_version: {json.dumps(api_version)}, kind: {json.dumps(kind)}, "
                    f"message: {gen.index[key]} }},")
    body.append("];")
    text = "\n".join(body) + "\n"
    names = ["f", "map", "msg", "Message", "Root", "Special", "ALWAYS", "BOOL", "BYTES", "F32", "F64", "I32",
             "I64", "INLINE", "NEVER", "OMIT", "ONE", "PTR", "REP", "STR", "U32", "U64"]
    used = [n for n in names if re.search(r"(?<![\w\"])" + n + r"(?![\w\"])", text)]
    head = [
        "//! The protobuf schema of the built-in kinds, with Go's JSON rules.",
        "//!",
        "//! @generated by gen/generate.py from the Go type descriptors in kubectl",
        "//! (apiextensions.k8s.io: anthoscli plus the generator's overlay). Do not",
        "//! edit; re-run the generator (see gen/README.md).",
        "",
        "use super::schema::{" + ", ".join(used) + "};",
        "",
    ]
    return "\n".join(head) + "\n" + text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubectl", default="/usr/lib/google-cloud-sdk/bin/kubectl.1.33")
    ap.add_argument("--apiextensions", default="/usr/lib/google-cloud-sdk/bin/anthoscli")
    ap.add_argument("--k8s-pb", default=os.path.expanduser("~/.cargo/registry/src/*/k8s-pb-0.9.0"))
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    types = load_types(args.kubectl, ["k8s.io/api/", "k8s.io/apimachinery/"])
    ext = load_types(args.apiextensions, ["k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"])
    for key, fields in ext.items():
        types[key] = fields
    for key, extra in OVERLAY_FIELDS.items():
        have = {f["name"] for f in types[key]}
        types[key] = types[key] + [f for f in extra if f["name"] not in have]
    for key, fields in OVERLAY_TYPES.items():
        types.setdefault(key, fields)
    gen = Generator(types)
    for key, _, _ in ROOTS:
        gen.message(key)
    # Every special form is in the table, reachable or not, so the decoder's
    # handling of each is tested (and ready for the next root that needs it).
    for key in SPECIAL:
        gen.message(key)
    gen.message("#items:" + json.dumps(_t("string"), sort_keys=True))
    gen.build()
    problems = cross_check(gen, args.k8s_pb)
    for note in gen.notes:
        print("note:", note, file=sys.stderr)
    if problems:
        raise SystemExit(f"{problems} cross-check problems")
    with open(args.out, "w") as f:
        f.write(render(gen))
    nfields = sum(len(v[1]) for v in gen.messages.values())
    print(f"wrote {args.out}: {len(gen.order)} messages, {nfields} fields, {len(ROOTS)} roots", file=sys.stderr)


if __name__ == "__main__":
    main()
