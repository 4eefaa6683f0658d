#!/usr/bin/env python3
"""NGSolve on the unit-cube Poisson problem of `fem solve --problem poisson --dim 3`.

Unit cube, n^3 hexahedra, H1 order p (Q_p), u = 0 on the boundary, -Δu = f with
f = 3π² Π sin(π x_a). Quadrature: p + 2 Gauss points per direction (bonus order 2
over the form's 2p), as fem and benches/cpu's DOLFINx run use. Stages timed:
  mesh      MakeStructured3DMesh(hexes=True)
  space     H1(order=p, dirichlet=all)            (DOF numbering)
  asm_A     BilinearForm(grad u · grad v).Assemble() (sparsity + element matrices + scatter)
  asm_b     LinearForm(f v).Assemble()
Prints one JSON line with the seconds, the DOFs and the peak RSS (KB).
"""
import argparse, json, resource, time

import ngsolve as ng
from ngsolve.meshes import MakeStructured3DMesh

p_ = argparse.ArgumentParser()
p_.add_argument("--n", type=int, required=True, help="cells per direction")
p_.add_argument("--p", type=int, required=True, help="degree")
p_.add_argument("--threads", type=int, default=1)
a_ = p_.parse_args()

ng.SetNumThreads(a_.threads)
T = {}


def timed(name, f):
    t = time.perf_counter()
    r = f()
    T[name] = round(time.perf_counter() - t, 4)
    return r


with ng.TaskManager():
    mesh = timed("mesh", lambda: MakeStructured3DMesh(hexes=True, nx=a_.n, ny=a_.n, nz=a_.n))
    fes = timed("space", lambda: ng.H1(mesh, order=a_.p, dirichlet=".*"))
    u, v = fes.TnT()
    dx = ng.dx(bonus_intorder=2)
    a = ng.BilinearForm(ng.grad(u) * ng.grad(v) * dx, symmetric=False)
    timed("asm_A", a.Assemble)
    f = 3 * ng.pi**2 * ng.sin(ng.pi * ng.x) * ng.sin(ng.pi * ng.y) * ng.sin(ng.pi * ng.z)
    b = ng.LinearForm(f * v * dx)
    timed("asm_b", b.Assemble)

print(json.dumps({"tool": "ngsolve", "version": ng.__version__, "threads": a_.threads, "n": a_.n, "p": a_.p,
                  "dofs": fes.ndof, "free": sum(fes.FreeDofs()), "nnz": a.mat.nze, "t": T,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}), flush=True)
