"""Contact-implicit MPC for floating-base 3D robots on a reduced model (docs/MPC.md, "3D").

    srb.py          the single rigid body (mass, inertia, feet) derived from a RobotModel
    ocp.py          the contact-implicit OCP on it (same interface as mpc.wholebody.ocp.ContactOcp)
    gaits.py        offline periodic gaits of that OCP (IPOPT, free initial state)
    wholebody.py    the compiled layer that turns a plan into joint commands
    controller.py   the MPC controller (acados SQP-RTI every tick)
"""
