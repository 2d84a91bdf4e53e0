"""The controller: contact-implicit OCPs solved with acados (real time) and IPOPT (reference).

`mpc.acados.runtime` is the only module that knows how the acados wheel is wired in.
"""
