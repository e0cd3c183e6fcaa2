"""The layer table (samples/layers.csv) as the report needs it: names, problems, one image's im2col GEMM."""
import csv


def pad_total(text):
    parts = [int(v) for v in text.split(":")]
    return 2 * parts[0] if len(parts) == 1 else parts[0] + parts[1]


def read_layer_table(path):
    layers = []
    with open(path) as f:
        for row in csv.reader(line for line in f if line.strip() and not line.startswith("#")):
            n, c, h, w, k, r, s, sh, sw = map(int, row[1:10])
            dh, dw, g = map(int, row[12:15])
            p = (h + pad_total(row[10]) - dh * (r - 1) - 1) // sh + 1
            q = (w + pad_total(row[11]) - dw * (s - 1) - 1) // sw + 1
            layers.append({"name": row[0], "N": n, "C": c, "H": h, "W": w, "K": k, "R": r, "S": s, "P": p, "Q": q,
                           "groups": g})
    return layers


def image_gemm(layer):
    """One image's im2col product, M = P*Q output pixels, N = K filters, K = C*R*S, for a layer of one
    group (grouped layers run many small products instead); None for grouped layers."""
    if layer["groups"] != 1:
        return None
    return layer["P"] * layer["Q"], layer["K"], layer["C"] * layer["R"] * layer["S"]
