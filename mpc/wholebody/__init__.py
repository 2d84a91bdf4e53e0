"""Contact-implicit MPC of planar robots on their whole-body model (docs/MPC.md).

    ocp.py                  the contact-implicit OCP (semi-implicit Euler, smoothed complementarity,
                            maximal dissipation) on the RobotModel itself
    tasks.py                what the MPC is asked to do (GaitTask: hop, walk, stand; PlanTask)
    gaits.py                offline periodic gaits of that OCP (IPOPT, free initial state)
    plan_transcription.py   an offline plan (mpc.planning) re-solved on the MPC's model (IPOPT)
    terrain.py              a plan's holes (the terrain a PlanTask avoids and is judged on)
    controller.py           the MPC controller (acados SQP-RTI every tick, mpc.acados)

A sibling of mpc/centroidal/ (3D robots, single rigid body): both build on mpc/acados/ and the
shared mpc/problem.py, reference.py and ipopt_ocp.py, and neither imports the other.
"""
