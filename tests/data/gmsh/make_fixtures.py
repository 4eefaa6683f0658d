"""Writes the Gmsh fixtures of tests/gmsh_versions.rs with Gmsh itself
(`pip install gmsh`): the same small meshes in MSH 2.2, 4.0 and 4.1, ASCII
and binary (4.0 in ASCII only, as Gmsh writes it), as Gmsh lays them out. Run from this folder; the tests read
the files, not this script."""
import gmsh

FORMATS = [("22", 2.2), ("40", 4.0), ("41", 4.1)]


def write_all(stem):
    for tag, version in FORMATS:
        # Gmsh writes MSH 4.0 in ASCII only.
        for binary in ((0,) if tag == "40" else (0, 1)):
            gmsh.option.setNumber("Mesh.MshFileVersion", version)
            gmsh.option.setNumber("Mesh.Binary", binary)
            gmsh.write(f"{stem}-v{tag}{'-bin' if binary else ''}.msh")


def disk():
    """Triangles of a disk of radius 1: a boundary curve group and a
    surface group with names."""
    gmsh.model.add("disk")
    d = gmsh.model.occ.addDisk(0, 0, 0, 1, 1)
    gmsh.model.occ.synchronize()
    gmsh.model.addPhysicalGroup(2, [d], 5, "plate")
    curves = [c for (_, c) in gmsh.model.getBoundary([(2, d)])]
    gmsh.model.addPhysicalGroup(1, curves, 7, "rim")
    gmsh.option.setNumber("Mesh.MeshSizeMax", 0.35)
    gmsh.model.mesh.generate(2)
    write_all("disk")


def mixed():
    """A unit cube cut at x = 0.5: prisms (extruded triangles) on the left,
    tetrahedra on the right, one volume group each."""
    gmsh.model.add("mixed")
    gmsh.option.setNumber("Mesh.MeshSizeMax", 0.5)
    gmsh.option.setNumber("Mesh.MeshSizeMin", 0.5)
    s = gmsh.model.geo.addPoint(0, 0, 0)
    p = [s, gmsh.model.geo.addPoint(0, 1, 0), gmsh.model.geo.addPoint(0, 1, 1), gmsh.model.geo.addPoint(0, 0, 1)]
    lines = [gmsh.model.geo.addLine(p[i], p[(i + 1) % 4]) for i in range(4)]
    face = gmsh.model.geo.addPlaneSurface([gmsh.model.geo.addCurveLoop(lines)])
    out = gmsh.model.geo.extrude([(2, face)], 0.5, 0, 0, numElements=[2], recombine=True)
    left = out[1][1]
    far = out[0][1]
    out2 = gmsh.model.geo.extrude([(2, far)], 0.5, 0, 0)
    right = out2[1][1]
    gmsh.model.geo.synchronize()
    gmsh.model.addPhysicalGroup(3, [left], 1, "layer")
    gmsh.model.addPhysicalGroup(3, [right], 2, "bulk")
    gmsh.model.addPhysicalGroup(2, [face], 3, "inlet")
    gmsh.model.mesh.generate(3)
    write_all("mixed")


def tet10():
    """Second-order tetrahedra of a box, with the box's six faces in one
    group and the volume in two groups (so MSH 2.2 writes its elements
    twice)."""
    gmsh.model.add("tet10")
    v = gmsh.model.occ.addBox(0, 0, 0, 1, 0.5, 0.5)
    gmsh.model.occ.synchronize()
    gmsh.model.addPhysicalGroup(3, [v], 1, "solid")
    gmsh.model.addPhysicalGroup(3, [v], 2, "steel")
    faces = [f for (_, f) in gmsh.model.getBoundary([(3, v)])]
    gmsh.model.addPhysicalGroup(2, faces, 3, "skin")
    gmsh.option.setNumber("Mesh.MeshSizeMax", 0.5)
    gmsh.option.setNumber("Mesh.MeshSizeMin", 0.5)
    gmsh.model.mesh.generate(3)
    gmsh.model.mesh.setOrder(2)
    write_all("tet10")


def hex27():
    """Transfinite, recombined second-order hexahedra (27 nodes) of a
    box, with a periodic pair of faces ($Periodic) and a clamped face."""
    gmsh.model.add("hex27")
    v = gmsh.model.occ.addBox(0, 0, 0, 2, 1, 1)
    gmsh.model.occ.synchronize()
    for (d, t) in gmsh.model.getEntities(1):
        gmsh.model.mesh.setTransfiniteCurve(t, 3)
    for (d, t) in gmsh.model.getEntities(2):
        gmsh.model.mesh.setTransfiniteSurface(t)
        gmsh.model.mesh.setRecombine(2, t)
    gmsh.model.mesh.setTransfiniteVolume(v)
    # faces y = 0 and y = 1 periodic
    faces = gmsh.model.getEntitiesInBoundingBox(-0.1, -0.1, -0.1, 2.1, 0.1, 1.1, 2)
    faces1 = gmsh.model.getEntitiesInBoundingBox(-0.1, 0.9, -0.1, 2.1, 1.1, 1.1, 2)
    gmsh.model.mesh.setPeriodic(2, [faces1[0][1]], [faces[0][1]], [1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1])
    clamp = gmsh.model.getEntitiesInBoundingBox(-0.1, -0.1, -0.1, 0.1, 1.1, 1.1, 2)
    gmsh.model.addPhysicalGroup(3, [v], 1, "beam")
    gmsh.model.addPhysicalGroup(2, [clamp[0][1]], 2, "clamped")
    gmsh.model.mesh.generate(3)
    gmsh.model.mesh.setOrder(2)
    write_all("hex27")


def partitioned():
    """The disk in three partitions, as MSH 2.2 writes them: each element
    with its partition count and partitions after the two usual tags."""
    gmsh.model.add("parts")
    d = gmsh.model.occ.addDisk(0, 0, 0, 1, 1)
    gmsh.model.occ.synchronize()
    gmsh.model.addPhysicalGroup(2, [d], 5, "plate")
    gmsh.option.setNumber("Mesh.MeshSizeMax", 0.35)
    gmsh.model.mesh.generate(2)
    gmsh.model.mesh.partition(3)
    gmsh.option.setNumber("Mesh.MshFileVersion", 2.2)
    gmsh.option.setNumber("Mesh.Binary", 0)
    gmsh.write("disk-parts-v22.msh")


gmsh.initialize()
gmsh.option.setNumber("General.Terminal", 0)
disk()
mixed()
tet10()
hex27()
partitioned()
gmsh.finalize()
