#!/usr/bin/env python3
"""Writes a hexahedral cantilever beam [0, L] x [0, H] x [0, H] as Gmsh MSH 2.2
(ASCII): volume group "beam", boundary groups "clamp" (x = 0) and "tip"
(x = L). Usage: make_beam.py NX NY NZ OUT.msh [L H]"""
import sys

nx, ny, nz = (int(v) for v in sys.argv[1:4])
out = sys.argv[4]
length = float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
height = float(sys.argv[6]) if len(sys.argv) > 6 else 1.0


def node(i, j, k):
    return 1 + i + (nx + 1) * (j + (ny + 1) * k)


with open(out, "w") as f:
    f.write("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n")
    f.write('$PhysicalNames\n3\n2 2 "clamp"\n2 3 "tip"\n3 1 "beam"\n$EndPhysicalNames\n')
    f.write("$Nodes\n%d\n" % ((nx + 1) * (ny + 1) * (nz + 1)))
    for k in range(nz + 1):
        for j in range(ny + 1):
            for i in range(nx + 1):
                f.write("%d %.17g %.17g %.17g\n" % (node(i, j, k), length * i / nx, height * j / ny, height * k / nz))
    f.write("$EndNodes\n$Elements\n%d\n" % (nx * ny * nz + 2 * ny * nz))
    e = 1
    for k in range(nz):
        for j in range(ny):
            for i in range(nx):
                corners = [node(i, j, k), node(i + 1, j, k), node(i + 1, j + 1, k), node(i, j + 1, k)]
                corners += [c + (nx + 1) * (ny + 1) for c in corners]
                f.write("%d 5 2 1 1 %s\n" % (e, " ".join(map(str, corners))))
                e += 1
    for tag, i in ((2, 0), (3, nx)):
        for k in range(nz):
            for j in range(ny):
                f.write("%d 3 2 %d %d %d %d %d %d\n" % (e, tag, tag, node(i, j, k), node(i, j + 1, k), node(i, j + 1, k + 1), node(i, j, k + 1)))
                e += 1
    f.write("$EndElements\n")
