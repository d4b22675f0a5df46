"""Prints the fields of a txopt --report JSON file as stable lines for FileCheck.

Fails if a field the report promises is missing or has the wrong type.
"""
import json
import os
import sys

report = json.load(open(sys.argv[1]))
for key, kind in [("model", str), ("opset", int), ("ops_in", dict), ("tx_ops", dict),
                  ("parameters", int), ("warnings", list), ("fused", dict),
                  ("not_fused", list)]:
    if not isinstance(report.get(key), kind):
        sys.exit(f"check_report: field '{key}' missing or not {kind.__name__}")
for miss in report["not_fused"]:
    if set(miss) != {"pattern", "node", "reason"}:
        sys.exit(f"check_report: bad not_fused entry {miss}")

def pick(table, keys):
    return " ".join(f"{k}={table.get(k, 0)}" for k in keys)

print("model", os.path.basename(report["model"]))
print("opset", report["opset"])
print("ops_in", pick(report["ops_in"], ["LayerNormalization", "MatMul", "SoftmaxCrossEntropyLoss"]))
print("tx_ops", pick(report["tx_ops"], ["tx.layer_norm", "tx.matmul", "tx.layer_normalization"]))
print("parameters", report["parameters"])
print("fused", pick(report["fused"], ["layer_norm", "rms_norm", "optimizer_params", "optimizer_ops",
                                     "attention"]))
print("not_fused", len(report["not_fused"]))
print("warnings", len(report["warnings"]))
