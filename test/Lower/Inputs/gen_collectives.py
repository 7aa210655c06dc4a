"""Writes an SPMD @train_step (MLIR) that checks every SOAP communication op
on N ranks against results computed here, independently, in plain Python.

  gen_collectives.py N > collectives.mlir

Each check gives every rank its own input (a constant table indexed by
soap.rank), runs one op, and compares the result with the expected one of
that rank (another table). The loss is the bitmask of the checks that failed
on some rank (bit k: check k; an all_reduce max over the ranks), so a run
that prints loss=0 passed every check, and a failing one names the checks
(the comments before each check give its bit).
"""
import sys

N = int(sys.argv[1])
ALL = list(range(N))


def value(check, rank, i):
    """A small integer, distinct across ranks, positive and negative."""
    return ((rank + 1) * 37 + i * 11 + check * 5) % 23 - 11


# Tensors are (shape, flat list); only rank 0, 1 and 2 tensors are used.
# i1 tensors hold 0 and 1 (false, true).
def make(check, rank, shape, elem="f32"):
    size = 1
    for s in shape:
        size *= s
    v = [value(check, rank, i) for i in range(size)]
    return (list(shape), [x % 2 for x in v] if elem == "i1" else v)


def rows(t):
    shape, flat = t
    return [flat[r * shape[1]:(r + 1) * shape[1]] for r in range(shape[0])]


def from_rows(rs):
    return ([len(rs), len(rs[0])], [v for r in rs for v in r])


def split(t, dim, n):
    """n equal parts of a 2-D tensor along dim."""
    rs = rows(t)
    if dim == 0:
        k = len(rs) // n
        return [from_rows(rs[j * k:(j + 1) * k]) for j in range(n)]
    k = len(rs[0]) // n
    return [from_rows([r[j * k:(j + 1) * k] for r in rs]) for j in range(n)]


def concat(ts, dim):
    if len(ts[0][0]) == 1:
        return ([ts[0][0][0] * len(ts)], [v for t in ts for v in t[1]])
    parts = [rows(t) for t in ts]
    if dim == 0:
        return from_rows([r for p in parts for r in p])
    return from_rows([sum((p[i] for p in parts), []) for i in range(len(parts[0]))])


def reduce(ts, kind, elem="f32"):
    cols = list(zip(*[t[1] for t in ts]))
    if elem == "i1":
        # arith's signed i1 (true is -1): a sum is an exclusive or, a max a
        # logical and, a min a logical or.
        if kind == "sum":
            out = [sum(c) % 2 for c in cols]
        elif kind == "max":
            out = [int(all(c)) for c in cols]
        else:
            out = [int(any(c)) for c in cols]
    elif kind == "sum":
        out = [sum(c) for c in cols]
    elif kind == "max":
        out = [max(c) for c in cols]
    elif kind == "min":
        out = [min(c) for c in cols]
    else:
        out = [sum(c) / len(c) for c in cols]
    return (ts[0][0], out)


class Program:
    def __init__(self):
        self.lines = []
        self.checks = 0
        self.counter = 0

    def fresh(self, prefix):
        self.counter += 1
        return "%%%s%d" % (prefix, self.counter)

    def emit(self, line):
        self.lines.append("    " + line)

    def table(self, per_rank, elem):
        """A constant holding one tensor per rank, and this rank's slice."""
        shape = per_rank[0][0]
        flat = [v for t in per_rank for v in t[1]]
        fmt = (lambda v: repr(float(v))) if elem.startswith("f") else (lambda v: str(int(v)))
        if elem == "i1":
            fmt = lambda v: "true" if v else "false"
        all_type = "tensor<%s%s>" % ("".join("%dx" % s for s in [len(per_rank)] + shape), elem)
        one_type = ttype(shape, elem)
        name = self.fresh("table")
        self.emit("%s = arith.constant dense<[%s]> : tensor<%dx%s>" % (
            name, ", ".join(fmt(v) for v in flat), len(flat), elem))
        shaped = name
        full = [len(per_rank)] + shape
        if shape:
            shaped = self.fresh("shaped")
            self.emit("%s = tensor.expand_shape %s [[%s]] output_shape [%s] : tensor<%dx%s> into %s" % (
                shaped, name, ", ".join(str(i) for i in range(len(full))),
                ", ".join(str(s) for s in full), len(flat), elem, all_type))
        mine = self.fresh("mine")
        zeros = ", ".join(["%rank"] + ["0"] * len(shape))
        sizes = ", ".join(["1"] + [str(s) for s in shape])
        ones = ", ".join(["1"] * (len(shape) + 1))
        self.emit("%s = tensor.extract_slice %s[%s] [%s] [%s] : %s to %s" % (
            mine, shaped, zeros, sizes, ones, all_type, one_type))
        return mine

    def check(self, comment, op_text, inputs, expected, elem, members=None):
        """inputs: per rank (or None for recv); expected: per rank (None
        where the result is undefined). `op_text` has {in} and {out_type}."""
        bit = self.checks
        self.checks += 1
        self.emit("// bit %d: %s" % (bit, comment))
        shape = next(e for e in expected if e is not None)[0]
        src = self.table(inputs, elem) if inputs is not None else None
        want = self.table([e if e is not None else (shape, [0] * len(next(x for x in expected if x is not None)[1]))
                           for e in expected], elem)
        result = self.fresh("r")
        self.emit(op_text.format(res=result, inp=src, t_in=ttype(inputs[0][0], elem) if inputs else "",
                                 t_out=ttype(shape, elem)))
        err = self.error(result, want, shape, elem)
        flag = self.fresh("flag")
        self.emit("%s = arith.cmpf one, %s, %%fzero : f32" % (flag, err))
        if members is not None:
            member = self.fresh("member")
            self.emit("%s = arith.constant false" % member)
            for m in members:
                c = self.fresh("c")
                e = self.fresh("eq")
                o = self.fresh("or")
                self.emit("%s = arith.constant %d : index" % (c, m))
                self.emit("%s = arith.cmpi eq, %%rank, %s : index" % (e, c))
                self.emit("%s = arith.ori %s, %s : i1" % (o, member, e))
                member = o
            f2 = self.fresh("flag")
            self.emit("%s = arith.andi %s, %s : i1" % (f2, flag, member))
            flag = f2
        w = self.fresh("w")
        self.emit("%s = arith.constant %s : f32" % (w, repr(float(2 ** bit))))
        s = self.fresh("s")
        self.emit("%s = arith.select %s, %s, %%fzero : f32" % (s, flag, w))
        total = self.fresh("total")
        self.emit("%s = arith.addf %s, %s : f32" % (total, self.total, s))
        self.total = total

    def error(self, got, want, shape, elem):
        """The sum of squared differences as an f32 scalar."""
        d = len(shape)
        dims = ", ".join("d%d" % i for i in range(d))
        ident = "affine_map<(%s) -> (%s)>" % (dims, dims)
        scalar = "affine_map<(%s) -> ()>" % dims
        iters = ", ".join(['"reduction"'] * d)
        acc = self.fresh("acc")
        self.emit("%s = linalg.fill ins(%%fzero : f32) outs(%%e0 : tensor<f32>) -> tensor<f32>" % acc)
        out = self.fresh("err")
        t = ttype(shape, elem)
        self.emit("%s = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = [%s]} "
                  "ins(%s, %s : %s, %s) outs(%s : tensor<f32>) {" % (
                      out, ident, ident, scalar, iters, got, want, t, t, acc))
        self.emit("^bb0(%a: {e}, %b: {e}, %c: f32):".format(e=elem))
        if elem == "i64":
            self.emit("  %d = arith.subi %a, %b : i64")
            self.emit("  %f = arith.sitofp %d : i64 to f32")
        elif elem in ("i1", "i8"):
            ext = "extui" if elem == "i1" else "extsi"
            self.emit("  %%x = arith.%s %%a : %s to i64" % (ext, elem))
            self.emit("  %%y = arith.%s %%b : %s to i64" % (ext, elem))
            self.emit("  %d = arith.subi %x, %y : i64")
            self.emit("  %f = arith.sitofp %d : i64 to f32")
        elif elem == "f64":
            self.emit("  %d = arith.subf %a, %b : f64")
            self.emit("  %f = arith.truncf %d : f64 to f32")
        else:
            self.emit("  %f = arith.subf %a, %b : f32")
        self.emit("  %q = arith.mulf %f, %f : f32")
        self.emit("  %s = arith.addf %c, %q : f32")
        self.emit("  linalg.yield %s : f32")
        self.emit("} -> tensor<f32>")
        scalar_value = self.fresh("errv")
        self.emit("%s = tensor.extract %s[] : tensor<f32>" % (scalar_value, out))
        return scalar_value


def ttype(shape, elem):
    return "tensor<%s%s>" % ("".join("%dx" % s for s in shape), elem)


def group_text(g):
    return "[%s]" % ", ".join(str(x) for x in g)


def main():
    p = Program()
    p.total = "%fzero"
    everyone = group_text(ALL)

    # all_reduce: every kind, f32/f64/i64, a matrix and a scalar.
    for kind, elem, shape in [("sum", "f32", [2, 3]), ("max", "f32", [2, 3]),
                              ("min", "f64", [3]), ("mean", "f32", [2, 2]),
                              ("sum", "i64", [2, 3]), ("sum", "f32", []),
                              ("sum", "i8", [2, 3]), ("sum", "i1", [2, 3]),
                              ("max", "i1", [5]), ("min", "i1", [5])]:
        c = p.checks
        ins = [make(c, r, shape, elem) for r in ALL]
        out = reduce(ins, kind, elem)
        p.check("all_reduce %s %s%s" % (kind, elem, shape),
                "{res} = soap.all_reduce %s {inp} over %s : {t_in}" % (kind, everyone),
                ins, [out] * N, elem)

    # all_gather along each dimension, group order.
    for dim, elem in [(0, "f32"), (1, "f64"), (1, "i64"), (0, "i1")]:
        c = p.checks
        ins = [make(c, r, [2, 3], elem) for r in ALL]
        out = concat(ins, dim)
        p.check("all_gather dim %d %s" % (dim, elem),
                "{res} = soap.all_gather {inp} dim %d over %s : {t_in} -> {t_out}" % (dim, everyone),
                ins, [out] * N, elem)

    # reduce_scatter along each dimension.
    for dim, kind, elem in [(0, "sum", "f32"), (1, "sum", "f64"), (1, "mean", "f32"),
                            (0, "max", "i64"), (1, "sum", "i1")]:
        c = p.checks
        shape = [2 * N, 3] if dim == 0 else [3, 2 * N]
        ins = [make(c, r, shape, elem) for r in ALL]
        parts = split(reduce(ins, kind, elem), dim, N)
        p.check("reduce_scatter %s dim %d %s" % (kind, dim, elem),
                "{res} = soap.reduce_scatter %s {inp} dim %d over %s : {t_in} -> {t_out}" % (kind, dim, everyone),
                ins, parts, elem)

    # all_to_all both ways, and within one dimension.
    for s, cd, shape, elem in [(0, 1, [2 * N, 3], "f32"), (1, 0, [3, 2 * N], "f64"),
                               (1, 1, [2, 2 * N], "i64"), (0, 1, [2 * N, 2], "i8")]:
        c = p.checks
        ins = [make(c, r, shape, elem) for r in ALL]
        outs = [concat([split(ins[j], s, N)[m] for j in ALL], cd) for m in ALL]
        p.check("all_to_all split %d concat %d %s" % (s, cd, elem),
                "{res} = soap.all_to_all {inp} split %d concat %d over %s : {t_in} -> {t_out}" % (s, cd, everyone),
                ins, outs, elem)

    # broadcast from the last rank.
    for elem, shape in [("f32", [4]), ("i64", [2, 2]), ("i1", [3])]:
        c = p.checks
        ins = [make(c, r, shape, elem) for r in ALL]
        p.check("broadcast root %d %s" % (N - 1, elem),
                "{res} = soap.broadcast {inp} root %d over %s : {t_in}" % (N - 1, everyone),
                ins, [ins[N - 1]] * N, elem)

    # send/recv around a ring (every rank sends and receives).
    c = p.checks
    ins = [make(c, r, [2, 3]) for r in ALL]
    succ = [(r + 1) % N for r in ALL]
    src = p.table(ins, "f32")
    p.emit("soap.send %s from %s to %s tag 5 : tensor<2x3xf32>" % (src, everyone, group_text(succ)))
    p.check("send/recv ring",
            "{res} = soap.recv from %s to %s tag 5 : {t_out}" % (everyone, group_text(succ)),
            None, [ins[(m - 1) % N] for m in ALL], "f32")

    # A subgroup in reverse order (last rank, then 0): members gather in
    # group order; the others skip the op.
    sub = [N - 1, 0]
    c = p.checks
    ins = [make(c, r, [1, 2]) for r in ALL]
    out = concat([ins[m] for m in sub], 0)
    p.check("all_gather over %s" % group_text(sub),
            "{res} = soap.all_gather {inp} dim 0 over %s : {t_in} -> {t_out}" % group_text(sub),
            ins, [out if r in sub else None for r in ALL], "f32", members=sub)

    # soap.on_devices: the body runs on rank 0 only (a broadcast over [0]).
    c = p.checks
    ins = [make(c, r, [3]) for r in ALL]
    src = p.table(ins, "f32")
    p.emit("%guarded = soap.on_devices [0] -> tensor<3xf32> {")
    p.emit("  %%g = soap.broadcast %s root 0 over [0] : tensor<3xf32>" % src)
    p.emit("  soap.yield %g : tensor<3xf32>")
    p.emit("}")
    p.check("on_devices [0]",
            "{res} = soap.all_reduce sum %guarded over [0] : {t_out}",
            None, [ins[0]] + [None] * (N - 1), "f32", members=[0])

    print("// Generated by gen_collectives.py %d; %d checks." % (N, p.checks))
    print("module attributes {soap.num_devices = %d : i64} {" % N)
    print("  func.func @train_step(%dummy: tensor<1xf32> {soap.role = \"input\", soap.name = \"dummy\"})")
    print("      -> (tensor<f32> {soap.role = \"loss\", soap.name = \"failed_checks\"}) {")
    print("    %fzero = arith.constant 0.0 : f32")
    print("    %rank = soap.rank : index")
    print("    %e0 = tensor.empty() : tensor<f32>")
    print("\n".join(p.lines))
    print("    %%failed = tensor.from_elements %s : tensor<f32>" % p.total)
    print("    %%any = soap.all_reduce max %%failed over %s : tensor<f32>" % everyone)
    print("    return %any : tensor<f32>")
    print("  }")
    print("}")


if __name__ == "__main__":
    main()
