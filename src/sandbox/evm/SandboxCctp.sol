// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @notice What the sandbox's messenger needs of the sandbox's USDC (SandboxUsdc.sol).
interface ISandboxUsdc {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
    function burn(address from, uint256 amount) external;
    function mint(address to, uint256 amount) external;
}

/// @notice The handler side of a received message (Circle's IMessageHandlerV2).
interface IMessageHandlerV2 {
    function handleReceiveFinalizedMessage(
        uint32 sourceDomain,
        bytes32 sender,
        uint32 finalityThresholdExecuted,
        bytes calldata messageBody
    ) external returns (bool);

    function handleReceiveUnfinalizedMessage(
        uint32 sourceDomain,
        bytes32 sender,
        uint32 finalityThresholdExecuted,
        bytes calldata messageBody
    ) external returns (bool);
}

/// @title The sandbox's MessageTransmitterV2: Circle's interface and message format (docs/sandbox.md "CCTP v2"),
/// written for the project. One attester (threshold 1), whose 65-byte signature over
/// keccak256(message) every received message needs. Its settings are immutables, so the runtime code
/// alone is placed at Circle's testnet address (anvil_setCode) and works there as it is; the nonce
/// ledger is the only storage.
contract SandboxMessageTransmitterV2 {
    uint32 public immutable localDomain;
    uint32 public constant version = 1;
    address public immutable attester;
    uint256 public constant signatureThreshold = 1;

    mapping(bytes32 => uint256) private _usedNonces;

    event MessageSent(bytes message);
    event MessageReceived(
        address indexed caller,
        uint32 sourceDomain,
        bytes32 indexed nonce,
        bytes32 sender,
        uint32 indexed finalityThresholdExecuted,
        bytes messageBody
    );

    constructor(uint32 localDomain_, address attester_) {
        localDomain = localDomain_;
        attester = attester_;
    }

    /// @notice 1 once a message with this nonce was received; the zero nonce counts as used (as Circle's).
    function usedNonces(bytes32 nonce) external view returns (uint256) {
        return nonce == bytes32(0) ? 1 : _usedNonces[nonce];
    }

    function isEnabledAttester(address who) external view returns (bool) {
        return who == attester;
    }

    /// @notice Emits the message with an empty nonce and finality executed: the attester fills both in.
    function sendMessage(
        uint32 destinationDomain,
        bytes32 recipient,
        bytes32 destinationCaller,
        uint32 minFinalityThreshold,
        bytes calldata messageBody
    ) external {
        require(destinationDomain != localDomain, "Domain is local domain");
        require(recipient != bytes32(0), "Recipient must be nonzero");
        emit MessageSent(
            abi.encodePacked(
                version,
                localDomain,
                destinationDomain,
                bytes32(0),
                bytes32(uint256(uint160(msg.sender))),
                recipient,
                destinationCaller,
                minFinalityThreshold,
                uint32(0),
                messageBody
            )
        );
    }

    /// @notice Checks the attestation, the destination, the caller, the version and the nonce (in
    /// Circle's order), marks the nonce used and hands the body to the recipient.
    function receiveMessage(bytes calldata message, bytes calldata attestation) external returns (bool success) {
        _verifyAttestation(message, attestation);
        require(message.length >= 148, "Invalid message: too short");
        require(uint32(bytes4(message[8:12])) == localDomain, "Invalid destination domain");
        bytes32 caller = bytes32(message[108:140]);
        if (caller != bytes32(0)) {
            require(caller == bytes32(uint256(uint160(msg.sender))), "Invalid caller for message");
        }
        require(uint32(bytes4(message[0:4])) == version, "Invalid message version");
        bytes32 nonce = bytes32(message[12:44]);
        require(nonce != bytes32(0) && _usedNonces[nonce] == 0, "Nonce already used");
        _usedNonces[nonce] = 1;
        _deliver(message);
        emit MessageReceived(
            msg.sender,
            uint32(bytes4(message[4:8])),
            nonce,
            bytes32(message[44:76]),
            uint32(bytes4(message[144:148])),
            message[148:]
        );
        return true;
    }

    function _deliver(bytes calldata message) private {
        uint32 sourceDomain = uint32(bytes4(message[4:8]));
        bytes32 sender = bytes32(message[44:76]);
        address recipient = address(uint160(uint256(bytes32(message[76:108]))));
        uint32 executed = uint32(bytes4(message[144:148]));
        IMessageHandlerV2 handler = IMessageHandlerV2(recipient);
        if (executed < 2000) {
            require(
                handler.handleReceiveUnfinalizedMessage(sourceDomain, sender, executed, message[148:]),
                "handleReceiveUnfinalizedMessage() failed"
            );
        } else {
            require(
                handler.handleReceiveFinalizedMessage(sourceDomain, sender, executed, message[148:]),
                "handleReceiveFinalizedMessage() failed"
            );
        }
    }

    function _verifyAttestation(bytes calldata message, bytes calldata attestation) private view {
        require(attestation.length == 65 * signatureThreshold, "Invalid attestation length");
        (address signer, ECDSA.RecoverError error, ) = ECDSA.tryRecover(keccak256(message), attestation);
        require(error == ECDSA.RecoverError.NoError && signer == attester, "Invalid signature: not attester");
    }
}

/// @title The sandbox's TokenMessengerV2: `depositForBurn` with maxFee and minFinalityThreshold,
/// BurnMessageV2 in Circle's layout, and the mint of amount − feeExecuted on receipt. Every sandbox
/// chain has it at the same address, so that address is every domain's remote TokenMessenger.
contract SandboxTokenMessengerV2 {
    uint32 public constant messageBodyVersion = 1;
    address public immutable localMessageTransmitter;
    address public immutable usdc;
    address public immutable feeRecipient;
    /// @notice Bit d set: domain d has a TokenMessenger (the sandbox's other chains).
    uint256 public immutable remoteDomains;

    event DepositForBurn(
        address indexed burnToken,
        uint256 amount,
        address indexed depositor,
        bytes32 mintRecipient,
        uint32 destinationDomain,
        bytes32 destinationTokenMessenger,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 indexed minFinalityThreshold,
        bytes hookData
    );
    event MintAndWithdraw(address indexed mintRecipient, uint256 amount, address indexed mintToken, uint256 feeCollected);

    constructor(address transmitter_, address usdc_, address feeRecipient_, uint256 remoteDomains_) {
        localMessageTransmitter = transmitter_;
        usdc = usdc_;
        feeRecipient = feeRecipient_;
        remoteDomains = remoteDomains_;
    }

    /// @notice Burns `amount` of the caller's USDC (it needs the allowance) and sends the burn message.
    function depositForBurn(
        uint256 amount,
        uint32 destinationDomain,
        bytes32 mintRecipient,
        address burnToken,
        bytes32 destinationCaller,
        uint256 maxFee,
        uint32 minFinalityThreshold
    ) external {
        require(amount > 0, "Amount must be nonzero");
        require(mintRecipient != bytes32(0), "Mint recipient must be nonzero");
        require(maxFee < amount, "Max fee must be less than amount");
        require(destinationDomain < 256 && (remoteDomains >> destinationDomain) & 1 == 1, "No TokenMessenger for domain");
        require(burnToken == usdc, "Burn token not supported");
        ISandboxUsdc(usdc).transferFrom(msg.sender, address(this), amount);
        ISandboxUsdc(usdc).burn(address(this), amount);
        bytes32 self = bytes32(uint256(uint160(address(this))));
        bytes memory body = abi.encodePacked(
            messageBodyVersion,
            bytes32(uint256(uint160(burnToken))),
            mintRecipient,
            amount,
            bytes32(uint256(uint160(msg.sender))),
            maxFee,
            uint256(0),
            uint256(0)
        );
        SandboxMessageTransmitterV2(localMessageTransmitter).sendMessage(
            destinationDomain,
            self,
            destinationCaller,
            minFinalityThreshold,
            body
        );
        emit DepositForBurn(
            burnToken,
            amount,
            msg.sender,
            mintRecipient,
            destinationDomain,
            self,
            destinationCaller,
            maxFee,
            minFinalityThreshold,
            ""
        );
    }

    function handleReceiveFinalizedMessage(
        uint32 remoteDomain,
        bytes32 sender,
        uint32,
        bytes calldata messageBody
    ) external returns (bool) {
        _checkOrigin(remoteDomain, sender);
        return _mint(messageBody);
    }

    function handleReceiveUnfinalizedMessage(
        uint32 remoteDomain,
        bytes32 sender,
        uint32 finalityThresholdExecuted,
        bytes calldata messageBody
    ) external returns (bool) {
        _checkOrigin(remoteDomain, sender);
        require(finalityThresholdExecuted >= 500, "Unsupported finality threshold");
        return _mint(messageBody);
    }

    function _checkOrigin(uint32 remoteDomain, bytes32 sender) private view {
        require(msg.sender == localMessageTransmitter, "Invalid message transmitter");
        require(
            remoteDomain < 256 &&
                (remoteDomains >> remoteDomain) & 1 == 1 &&
                sender == bytes32(uint256(uint160(address(this)))),
            "Remote TokenMessenger unsupported"
        );
    }

    /// @notice BurnMessageV2's checks (in Circle's order), then amount − feeExecuted to the recipient and the fee to feeRecipient.
    function _mint(bytes calldata body) private returns (bool) {
        require(body.length >= 228, "Invalid burn message: too short");
        require(uint32(bytes4(body[0:4])) == messageBodyVersion, "Invalid message body version");
        uint256 expirationBlock = uint256(bytes32(body[196:228]));
        require(expirationBlock == 0 || expirationBlock > block.number, "Message expired and must be re-signed");
        uint256 amount = uint256(bytes32(body[68:100]));
        uint256 fee = uint256(bytes32(body[164:196]));
        require(fee == 0 || fee < amount, "Fee equals or exceeds amount");
        require(fee <= uint256(bytes32(body[132:164])), "Fee exceeds max fee");
        address recipient = address(uint160(uint256(bytes32(body[36:68]))));
        ISandboxUsdc(usdc).mint(recipient, amount - fee);
        if (fee > 0) ISandboxUsdc(usdc).mint(feeRecipient, fee);
        emit MintAndWithdraw(recipient, amount - fee, usdc, fee);
        return true;
    }
}
