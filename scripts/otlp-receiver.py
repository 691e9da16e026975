"""A small OTLP/HTTP trace receiver for `npm run test:otel-live`.

It decodes what Kilde's exporter sends to POST /v1/traces with the OpenTelemetry project's own
protobuf definitions (the `opentelemetry-proto` package): `application/x-protobuf` as an
ExportTraceServiceRequest, `application/json` as OTLP/JSON (ids in hex, as the specification
says). GET /spans answers every span received so far as JSON, flattened. Usage:
    python otlp-receiver.py PORT
"""

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

SPANS = []
REQUESTS = []
LOCK = threading.Lock()


def value_of(v):
    """An AnyValue (protobuf message or OTLP/JSON dict) as a plain Python value."""
    if isinstance(v, dict):
        for key in ("stringValue", "boolValue", "doubleValue"):
            if key in v:
                return v[key]
        if "intValue" in v:
            return int(v["intValue"])
        if "arrayValue" in v:
            return [value_of(x) for x in v["arrayValue"].get("values", [])]
        return None
    which = v.WhichOneof("value")
    if which == "array_value":
        return [value_of(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


def from_protobuf(body):
    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    out = []
    for rs in req.resource_spans:
        resource = {a.key: value_of(a.value) for a in rs.resource.attributes}
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(
                    {
                        "traceId": s.trace_id.hex(),
                        "spanId": s.span_id.hex(),
                        "parentSpanId": s.parent_span_id.hex(),
                        "name": s.name,
                        "kind": s.kind,
                        "startNs": s.start_time_unix_nano,
                        "endNs": s.end_time_unix_nano,
                        "status": s.status.code,
                        "scope": ss.scope.name,
                        "attributes": {a.key: value_of(a.value) for a in s.attributes},
                        "links": [{"traceId": l.trace_id.hex(), "spanId": l.span_id.hex()} for l in s.links],
                        "resource": resource,
                    }
                )
    return out


def from_json(body):
    req = json.loads(body)
    out = []
    for rs in req.get("resourceSpans", []):
        resource = {a["key"]: value_of(a["value"]) for a in rs.get("resource", {}).get("attributes", [])}
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                out.append(
                    {
                        "traceId": s["traceId"],
                        "spanId": s["spanId"],
                        "parentSpanId": s.get("parentSpanId", ""),
                        "name": s["name"],
                        "kind": s.get("kind", 0),
                        "startNs": int(s["startTimeUnixNano"]),
                        "endNs": int(s["endTimeUnixNano"]),
                        "status": s.get("status", {}).get("code", 0),
                        "scope": ss.get("scope", {}).get("name", ""),
                        "attributes": {a["key"]: value_of(a["value"]) for a in s.get("attributes", [])},
                        "links": [{"traceId": l["traceId"], "spanId": l["spanId"]} for l in s.get("links", [])],
                        "resource": resource,
                    }
                )
    return out


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def read_body(self):
        """The request body: by Content-Length or chunked (Node sends either), gunzipped when gzip."""
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            body = b"".join(parts)
        else:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if (self.headers.get("content-encoding") or "").lower() == "gzip":
            body = gzip.decompress(body)
        return body

    def do_POST(self):
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        body = self.read_body()
        kind = (self.headers.get("content-type") or "").split(";")[0].strip()
        try:
            spans = from_json(body) if kind == "application/json" else from_protobuf(body)
        except Exception as err:  # a body the definitions cannot read is the exporter's bug: say so
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(err).encode())
            return
        with LOCK:
            SPANS.extend(spans)
            REQUESTS.append({"contentType": kind, "spans": len(spans)})
        if kind == "application/json":
            answer, answer_type = b"{}", "application/json"
        else:
            answer, answer_type = ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf"
        self.send_response(200)
        self.send_header("content-type", answer_type)
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self):
        with LOCK:
            body = json.dumps({"spans": SPANS, "requests": REQUESTS}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()
