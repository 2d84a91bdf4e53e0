"""The controller: contact-implicit OCPs solved with acados (real time) and IPOPT (reference).

    acados/         the acados wiring both MPCs build on (SQP-RTI solver, bulk I/O, cached builds)
    wholebody/      the planar robots' MPC on their whole-body model
    centroidal/     the 3D robots' MPC on a single rigid body (a sibling of wholebody/)
    problem.py, reference.py, ipopt_ocp.py   shared by both MPCs (and the planner)
    controllers.py  the controller factory; closed_loop.py: the in-process loop
    planning/       the offline planner (the MPCs import nothing from it)

`mpc.acados.runtime` is the only module that knows how the acados wheel is wired in.
"""
