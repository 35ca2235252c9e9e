"""An OTLP/HTTP trace receiver for the tests: decodes each POSTed body with the official
definitions (PyPI `opentelemetry-proto`) and appends every span to OUT as one JSON line.

    python otlp_receiver.py PORT OUT

A line: {"name", "trace_id", "span_id", "parent_span_id" (hex, "" for a root), "kind",
"attributes": {key: string value}, "status": code, "content_type", "service"}. A body that
does not decode is answered 400 and written as {"error": ...}, so a test sees it.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PORT = int(sys.argv[1])
OUT = sys.argv[2]


def value(any_value) -> str:
    return any_value.string_value if any_value.HasField("string_value") else repr(any_value)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        lines = []
        try:
            request = ExportTraceServiceRequest.FromString(body)
        except Exception as e:  # noqa: BLE001 - a bad body is an observation, not a crash
            lines.append({"error": f"{type(e).__name__}: {e}"})
            status = 400
        else:
            status = 200
            for rs in request.resource_spans:
                service = {kv.key: value(kv.value) for kv in rs.resource.attributes}.get("service.name")
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        lines.append({
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "kind": span.kind,
                            "attributes": {kv.key: value(kv.value) for kv in span.attributes},
                            "status": span.status.code,
                            "ordered": span.start_time_unix_nano <= span.end_time_unix_nano,
                            "content_type": self.headers.get("Content-Type"),
                            "service": service,
                            "path": self.path,
                        })
        with open(OUT, "a") as f:
            for line in lines:
                f.write(json.dumps(line, sort_keys=True) + "\n")
        answer = ExportTraceServiceResponse().SerializeToString() if status == 200 else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_args) -> None:
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
