"""The acados wiring both MPCs build on (mpc/wholebody/ and mpc/centroidal/ are its users).

    runtime.py      the one place that makes the acados wheel usable in-process; cached solver builds
    rti.py          a contact-implicit problem (mpc.problem) as an SQP-RTI solver with its clock state
    io.py, io.c     whole-horizon reads and writes of a solver in one C call each
    stage_pairs.py  the compiled complementarity pairs of the stage an MPC just sent
    smoke.py        a double integrator that proves the acados toolchain works end to end
"""
